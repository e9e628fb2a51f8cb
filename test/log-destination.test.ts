// The batched log destination (src/log-destination.ts): lines wait in a
// buffer until 4 KiB is gathered or 200 ms pass, go out whole and in order
// (a line longer than the buffer included), keep multi-byte characters
// intact, and the last of them are written when the process exits.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type TestContext, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { BatchedLogDestination } from "../src/log-destination.ts";

function logFile(t: TestContext): { fd: number; read(): string } {
  const dir = mkdtempSync(join(tmpdir(), "log-destination-"));
  const path = join(dir, "out.log");
  const fd = openSync(path, "w");
  t.after(() => {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });
  return { fd, read: () => readFileSync(path, "utf8") };
}

const line = (i: number, padding = 0) => `${JSON.stringify({ i, msg: "x".repeat(padding) })}\n`;

test("short lines wait for 4 KiB or the 200 ms flush, then arrive whole and in order", async (t) => {
  const { fd, read } = logFile(t);
  const destination = new BatchedLogDestination(fd);
  destination.write(line(0));
  destination.write(line(1));
  assert.equal(read(), "", "nothing written before 4 KiB or the timer");
  await sleep(450);
  assert.equal(read(), line(0) + line(1));

  const many = Array.from({ length: 60 }, (_, i) => line(i + 2, 100));
  for (const entry of many) destination.write(entry);
  const written = read();
  assert.ok(written.length >= 4096, "a 4 KiB batch went out without waiting for the timer");
  assert.ok((line(0) + line(1) + many.join("")).startsWith(written), "lines in order, none cut");
  destination.flush();
  assert.equal(read(), line(0) + line(1) + many.join(""));
});

test("a line longer than the buffer goes out whole, after the lines before it", (t) => {
  const { fd, read } = logFile(t);
  const destination = new BatchedLogDestination(fd);
  destination.write(line(1));
  const huge = line(2, 200_000);
  destination.write(huge);
  destination.write(line(3));
  destination.flush();
  assert.equal(read(), line(1) + huge + line(3));
});

test("multi-byte characters are written intact, also across batch boundaries", (t) => {
  const { fd, read } = logFile(t);
  const destination = new BatchedLogDestination(fd);
  const lines = Array.from({ length: 300 }, (_, i) => `${JSON.stringify({ i, name: "Zoë 🙂 Łódź ☃".repeat(5) })}\n`);
  for (const entry of lines) destination.write(entry);
  destination.flush();
  assert.equal(read(), lines.join(""));
});

test("the lines still buffered are written when the process exits", () => {
  const script = `
    import { BatchedLogDestination } from ${JSON.stringify(resolve(import.meta.dirname, "../src/log-destination.ts"))};
    const destination = new BatchedLogDestination(1);
    destination.write("last words\\n");
    process.exit(3);
  `;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(child.status, 3, child.stderr);
  assert.equal(child.stdout, "last words\n");
});
