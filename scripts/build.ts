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
import { builtinModules } from "node:module";
import { basename, join, resolve } from "node:path";
import { build, type Plugin } from "esbuild";

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

/**
 * Node's built-ins, imported by the bundle's ES modules, are loaded through require() instead. An ES
 * import of a built-in makes Node copy every export into a module namespace, calling each lazy
 * getter on the way: `node:http`'s loads undici (its fetch and WebSocket), 70 internal modules that no
 * request uses, about 30 ms of every start. esbuild's interop object reads each export when it is
 * used, so nothing lazy is woken early.
 */
const BUILTIN = new RegExp(`^(node:)?(${builtinModules.map((name) => name.replace(/[/]/g, "\\/")).join("|")})$`);
const builtinsThroughRequire: Plugin = {
  name: "builtins-through-require",
  setup(bundle) {
    bundle.onResolve({ filter: BUILTIN }, (args) =>
      args.kind === "import-statement" || args.kind === "dynamic-import"
        ? { path: args.path.startsWith("node:") ? args.path : `node:${args.path}`, namespace: "builtin" }
        : undefined,
    );
    bundle.onLoad({ filter: /.*/, namespace: "builtin" }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

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
  plugins: [builtinsThroughRequire],
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
