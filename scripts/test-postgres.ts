// Runs the API test suite a second time, on PostgreSQL: every in-process
// test builds its app on a fresh schema at POSTGRES_URL (see
// test/helpers.ts), dropped afterwards. Without POSTGRES_URL the run is
// skipped with a message, except under CI=true, where that is a failure.
// The process, CLI, config and resource-server tests do not touch the
// database backend and run once, in the main suite; so do the browser tests,
// except upstream sign-in's (issue 25), whose identities, pending sign-ins,
// tickets and mailed links are the backend's to keep, and the admin console's
// users and audit-log screens (issue 35), whose prefix search, sessions and
// export are the backend's queries.
import { spawnSync } from "node:child_process";
import { globSync } from "node:fs";

const BACKEND_INDEPENDENT =
  /^test\/(server|cli|config|scale-out|faults|mail-file|mail-outage|resource-server)\.test\.ts$|^test\/browser\/(?!(upstream-sign-in|admin-console-users|admin-console-service)\.test\.ts$)/;

if (!process.env.POSTGRES_URL) {
  const message =
    "PostgreSQL run skipped: POSTGRES_URL is not set (e.g. POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test)";
  if (process.env.CI === "true") {
    console.error(`${message}; CI requires it`);
    process.exit(1);
  }
  console.log(message);
  process.exit(0);
}

const files = globSync("test/**/*.test.ts")
  .filter((file) => !BACKEND_INDEPENDENT.test(file))
  .sort();
console.log(`Running ${files.length} test files on PostgreSQL`);
const result = spawnSync(process.execPath, ["--test", "--test-reporter=spec", ...files], {
  stdio: "inherit",
  env: { ...process.env, TEST_BACKEND: "postgres" },
});
process.exit(result.status ?? 1);
