// The entry point of the service process (npm start). Plain JavaScript, not
// TypeScript, so that nothing needs type stripping before Node's compile
// cache is on: code compiled once is kept on disk and reused by later
// starts. Then it runs the process itself: dist/server.mjs, the bundle that
// scripts/build.ts makes from src/server.ts (it says why). The bundle is
// built here when it is missing or older than the sources (a fresh clone, a
// pulled change); an unchanged restart only compares the inputs' sizes and
// times. For development, `node src/server.ts` runs the same process from
// the sources.
import { spawnSync } from "node:child_process";
import { enableCompileCache } from "node:module";
import { fileURLToPath } from "node:url";
import { bundleIsFresh } from "./bundle-stamp.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = fileURLToPath(new URL("../dist", import.meta.url));
if (!bundleIsFresh(root, dist)) {
  const build = spawnSync(process.execPath, [fileURLToPath(new URL("../scripts/build.ts", import.meta.url))], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (build.status !== 0) {
    process.stderr.write("the bundle could not be built (scripts/build.ts); see the lines above\n");
    process.exit(2);
  }
}
enableCompileCache();
await import(new URL("../dist/server.mjs", import.meta.url).href);
