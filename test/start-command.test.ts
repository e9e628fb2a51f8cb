// The README's start command on a restart: `npm start` loads the bundle that
// is already built instead of building it again, and rebuilds only when an
// input of the bundle changed (src/bundle-stamp.mjs).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { bundleIsFresh, fileStamp, STAMP_FILE } from "../src/bundle-stamp.mjs";
import { cleanEnv, scratchDir } from "./process.ts";

const ROOT = resolve(import.meta.dirname, "..");

describe("the bundle's stamp", () => {
  function project(t: { after: (fn: () => void) => void }) {
    const root = scratchDir(t);
    mkdirSync(join(root, "src"));
    mkdirSync(join(root, "dist"));
    writeFileSync(join(root, "src/a.ts"), "export const a = 1;\n");
    const stamp = (files: Record<string, [number, number] | null>) =>
      writeFileSync(join(root, "dist", STAMP_FILE), JSON.stringify({ files }));
    return { root, dist: join(root, "dist"), stamp };
  }

  test("is fresh while every recorded input has its recorded size and time, absent ones still absent", (t) => {
    const { root, dist, stamp } = project(t);
    stamp({ "src/a.ts": fileStamp(root, "src/a.ts"), "node_modules/.package-lock.json": null });
    assert.equal(bundleIsFresh(root, dist), true);
  });

  test("is stale when an input changed, appeared, disappeared, or the stamp is missing or not JSON", (t) => {
    const { root, dist, stamp } = project(t);
    const recorded = fileStamp(root, "src/a.ts");
    stamp({ "src/a.ts": recorded });
    utimesSync(join(root, "src/a.ts"), new Date(), new Date(Date.now() + 5000));
    assert.equal(bundleIsFresh(root, dist), false, "touched");

    stamp({ "src/a.ts": fileStamp(root, "src/a.ts"), "src/b.ts": null });
    writeFileSync(join(root, "src/b.ts"), "export const b = 2;\n");
    assert.equal(bundleIsFresh(root, dist), false, "appeared");

    stamp({ "src/a.ts": fileStamp(root, "src/a.ts"), "src/gone.ts": [10, 1] });
    assert.equal(bundleIsFresh(root, dist), false, "disappeared");

    writeFileSync(join(dist, STAMP_FILE), "{not json");
    assert.equal(bundleIsFresh(root, dist), false, "unreadable stamp");
    assert.equal(bundleIsFresh(root, join(root, "nowhere")), false, "no bundle at all");
  });

  test("the built bundle's stamp names the service's own sources and is fresh right after the build", () => {
    // npm test builds before the suites run (pretest:only), so dist/ is the build of these sources.
    assert.equal(bundleIsFresh(ROOT, join(ROOT, "dist")), true);
  });

  test("the built bundle is ASCII and leaves nodemailer to a chunk loaded with the first mail", () => {
    // One non-ASCII character makes every start decode the whole bundle as UTF-8 (docs/performance.md).
    const bundle = readFileSync(join(ROOT, "dist", "server.mjs"), "latin1");
    const nonAscii = bundle.search(/[\u0080-\u00ff]/); // read as latin1: every byte above 0x7f
    assert.equal(nonAscii, -1, `a non-ASCII character near: ${bundle.slice(nonAscii - 60, nonAscii + 20)}`);
    assert.ok(!bundle.includes("node_modules/nodemailer/"), "nodemailer is evaluated with the bundle");
  });
});

describe("npm start on a restart", () => {
  test("serves from the bundle already built, without building it again", async (t) => {
    const data = scratchDir(t);
    const child = spawn("npm", ["start", "--silent"], {
      cwd: ROOT,
      env: cleanEnv({
        HOME: data,
        PORT: "0",
        DATABASE_URL: `sqlite:${join(data, "users.db")}`,
        SHUTDOWN_DELAY_MS: "0",
      }),
      detached: true,
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    t.after(async () => {
      if (child.exitCode === null) {
        const exited = once(child, "exit");
        process.kill(-(child.pid as number), "SIGTERM");
        await exited;
      }
    });
    const started = Date.now();
    let baseUrl: string | undefined;
    while (baseUrl === undefined && Date.now() - started < 20_000 && child.exitCode === null) {
      baseUrl = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      if (baseUrl === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(baseUrl, `npm start did not come up:\n${output}`);
    const health = await fetch(`${baseUrl}/healthz`);
    assert.equal(health.status, 200);
    assert.doesNotMatch(output, /build: dist\/server\.mjs/, "no build on a restart with unchanged sources");
  });
});
