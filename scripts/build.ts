// npm run build (also run by npm start and by the test scripts before they
// start the process): bundles the service process (src/server.ts and the
// libraries it loads) into dist/server.mjs with esbuild. Nothing is
// rewritten but the module format: no minification, no down-levelling
// (Node 24 runs the code as written) and a source map, so stack traces name
// src/ files and lines. Why: loading the service from about a thousand
// module files (TypeBox alone is 373) was most of the time to first answer;
// one file loads in a fraction of that (docs/performance.md).
//
// Kept outside the bundle: native addons (loaded from node_modules by
// path), packages that read their own files at run time (Swagger UI's
// assets, pino's worker-thread transports), and drivers loaded only when
// configured (pg, ioredis, prom-client, ...), which stay lazy. Files that
// the service reads beside its own modules (the account pages' script and
// stylesheet) are copied beside the bundle.
import { copyFileSync, globSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { build } from "esbuild";

const ROOT = resolve(import.meta.dirname, "..");
const OUT = join(ROOT, "dist");

const EXTERNAL = [
  "@node-rs/argon2",
  "@fastify/swagger-ui",
  "pino-pretty",
  "pg",
  "ioredis",
  "prom-client",
  "@fastify/cors",
  "bcryptjs",
];

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const started = performance.now();
await build({
  entryPoints: [join(ROOT, "src/server.ts")],
  outdir: OUT,
  outExtension: { ".js": ".mjs" },
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  // Modules the service imports only when configured (the PostgreSQL and Redis stores, metrics, the
  // readable terminal log) become chunks of their own, loaded on that import, so they stay lazy.
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node24",
  sourcemap: true,
  external: EXTERNAL,
  logLevel: "warning",
  // CommonJS libraries inside an ES module bundle still call require() for Node's built-ins.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module";\nconst require = __createRequire(import.meta.url);',
  },
});
for (const asset of globSync("src/pages/*.{js,css}", { cwd: ROOT })) {
  copyFileSync(join(ROOT, asset), join(OUT, basename(asset)));
}
writeFileSync(join(OUT, "README"), "Built by npm run build from src/ (scripts/build.ts); not edited by hand.\n");
process.stderr.write(`build: dist/server.mjs in ${(performance.now() - started).toFixed(0)} ms\n`);
