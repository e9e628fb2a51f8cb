// What SQLite's WAL checkpoints cost the thread that commits (the event loop,
// in the service): the same small write transactions (four indexed inserts
// each, about what a login or a code exchange commits) back to back, with
//   inline:     SQLite's default, the committing connection checkpoints once
//               the WAL passes 1,000 pages (what the service does today);
//   background: no checkpoint on commit, a worker thread with its own
//               connection checkpointing (PASSIVE) every 200 ms;
//   hybrid:     the worker, and a checkpoint on commit only past 10,000 pages.
// Reports each mode's commit times and the largest WAL file seen. A finding
// for planning (docs/performance.md), not a figure with a target.
//
//   node bench/sqlite-checkpoints.ts [--commits 20000]
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";

const { values } = parseArgs({ options: { commits: { type: "string", default: "20000" } } });
const COMMITS = Number(values.commits);

const CHECKPOINTER = `
const { parentPort, workerData } = require("node:worker_threads");
const { DatabaseSync } = require("node:sqlite");
const db = new DatabaseSync(workerData.path);
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
const timer = setInterval(() => checkpoint.get(), 200);
parentPort.on("message", () => { clearInterval(timer); db.close(); parentPort.close(); });
`;

async function measure(mode: "inline" | "background" | "hybrid"): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "checkpoints-"));
  const path = join(dir, "bench.db");
  const db = new DatabaseSync(path);
  const pages = { inline: 1000, background: 0, hybrid: 10_000 }[mode];
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;
    PRAGMA wal_autocheckpoint = ${pages};
    CREATE TABLE rows (id TEXT PRIMARY KEY, owner TEXT, at TEXT, other TEXT, body TEXT);
    CREATE INDEX rows_owner ON rows (owner, at); CREATE INDEX rows_other ON rows (other);`);
  const worker = mode === "inline" ? undefined : new Worker(CHECKPOINTER, { eval: true, workerData: { path } });
  const insert = db.prepare("INSERT INTO rows VALUES (?, ?, ?, ?, ?)");
  const [begin, commit] = [db.prepare("BEGIN IMMEDIATE"), db.prepare("COMMIT")];
  const times: number[] = [];
  let largestWal = 0;
  for (let i = 0; i < COMMITS; i++) {
    begin.run();
    for (let j = 0; j < 4; j++)
      insert.run(crypto.randomUUID(), `user${i % 100}`, new Date().toISOString(), crypto.randomUUID(), "x".repeat(200));
    const started = process.hrtime.bigint();
    commit.run();
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
    if (i % 500 === 0) {
      await new Promise((resolve) => setImmediate(resolve));
      largestWal = Math.max(largestWal, statSync(`${path}-wal`).size);
    }
  }
  worker?.postMessage("stop");
  db.close();
  rmSync(dir, { recursive: true, force: true });
  times.sort((a, b) => a - b);
  const total = times.reduce((sum, time) => sum + time, 0);
  const at = (q: number) => (times[Math.floor(q * (times.length - 1))] as number).toFixed(3);
  const stalls = times.filter((time) => time > 5).length;
  return `| ${mode} | ${total.toFixed(0)} ms | ${at(0.5)} ms | ${at(0.99)} ms | ${at(1)} ms | ${stalls} | ${(largestWal / 1e6).toFixed(1)} MB |`;
}

console.log(`${COMMITS} commits of four indexed inserts each, WAL, synchronous=NORMAL, in ${tmpdir()}`);
console.log("| checkpoints | all commits | median | p99 | longest | over 5 ms | largest WAL |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const mode of ["inline", "background", "hybrid"] as const) console.log(await measure(mode));
