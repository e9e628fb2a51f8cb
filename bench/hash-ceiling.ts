// The ceiling for POST /auth/token: as many Argon2id verifies per second as
// this machine does with the service's own parameters, `parallel` at a time,
// on the same libuv thread pool size, with nothing else around them. Prints
// one JSON line: {"perSecond": n, "cpuMsPerVerify": ms} (CPU of the whole
// process, every thread, per verify).
import { createPasswordHasher, OWASP_ARGON2ID } from "../src/auth/passwords.ts";

const [parallelArg = "8", secondsArg = "5"] = process.argv.slice(2);
const parallel = Number(parallelArg);
const seconds = Number(secondsArg);
const hasher = createPasswordHasher(OWASP_ARGON2ID);
const hash = await hasher.hash("bench password 123");
let done = 0;
const end = performance.now() + seconds * 1000;
const start = performance.now();
const cpuBefore = process.cpuUsage();
await Promise.all(
  Array.from({ length: parallel }, async () => {
    while (performance.now() < end) {
      await hasher.verify(hash, "bench password 123");
      done += 1;
    }
  }),
);
const cpu = process.cpuUsage(cpuBefore);
const perSecond = done / ((performance.now() - start) / 1000);
process.stdout.write(`${JSON.stringify({ perSecond, cpuMsPerVerify: (cpu.user + cpu.system) / 1000 / done })}\n`);
