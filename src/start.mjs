// The entry point of the service process (npm start). Plain JavaScript, not
// TypeScript, so that nothing needs type stripping before Node's compile
// cache is on: code compiled once is kept on disk and reused by later
// starts. Then it runs the process itself: dist/server.mjs, the bundle that
// npm run build makes from src/server.ts (scripts/build.ts says why). For
// development, `node src/server.ts` runs the same process from the sources.
import { existsSync } from "node:fs";
import { enableCompileCache } from "node:module";

const bundle = new URL("../dist/server.mjs", import.meta.url);
if (!existsSync(bundle)) {
  process.stderr.write("dist/server.mjs is missing: run `npm run build` (npm start does it first)\n");
  process.exit(2);
}
enableCompileCache();
await import(bundle.href);
