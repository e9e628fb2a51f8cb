// Bundles the service process (src/server.ts and the libraries it loads)
// into dist/server.mjs with esbuild. `npm run build` always builds; without
// --force (src/start.mjs when dist/ is stale, the test and bench scripts
// before they start the process) it builds only when an input changed since
// the last build (src/bundle-stamp.mjs), so a restart costs no build. Nothing is
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
import { copyFileSync, globSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import { basename, join, relative, resolve } from "node:path";
import { build, type Plugin } from "esbuild";
import { ALWAYS_CHECKED, bundleIsFresh, fileStamp, STAMP_FILE } from "../src/bundle-stamp.mjs";

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

/**
 * The message catalogues (src/i18n/catalogues/) enter the bundle as their JSON text, which
 * src/i18n/catalogues.ts parses on first use: as object literals, all six languages' objects were
 * built with the bundle at every start.
 */
const cataloguesAsText: Plugin = {
  name: "catalogues-as-text",
  setup(bundle) {
    bundle.onLoad({ filter: /[\\/]src[\\/]i18n[\\/]catalogues[\\/].*\.json$/ }, async (args) => ({
      contents: `export default ${JSON.stringify(JSON.stringify(JSON.parse(await readFile(args.path, "utf8"))))};`,
      loader: "js",
    }));
  },
};

if (!process.argv.includes("--force") && bundleIsFresh(ROOT, OUT)) process.exit(0);

// Built beside dist/ and then renamed into place, so that a process starting meanwhile (another
// instance from the same checkout) finds either the old bundle whole or the new one, never half.
const staging = `${OUT}.${process.pid}.tmp`;
rmSync(staging, { recursive: true, force: true });
mkdirSync(staging, { recursive: true });
const started = performance.now();
const { metafile } = await build({
  entryPoints: [join(ROOT, "src/server.ts")],
  outdir: staging,
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
  metafile: true,
  external: EXTERNAL,
  logLevel: "warning",
  // The libraries' licence comments go to server.mjs.LEGAL.txt: two of them have non-ASCII names, and one
  // non-ASCII character makes Node decode the whole bundle as UTF-8 into a two-byte string at every
  // start, where an ASCII file takes the fast path (docs/performance.md, "What limits the figures").
  legalComments: "external",
  plugins: [builtinsThroughRequire, cataloguesAsText],
  // CommonJS libraries inside an ES module bundle still call require() for Node's built-ins.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module";\nconst require = __createRequire(import.meta.url);',
  },
});
const assets = globSync("src/pages/*.{js,css}", { cwd: ROOT });
for (const asset of assets) copyFileSync(join(ROOT, asset), join(staging, basename(asset)));
// The admin console's modules and stylesheet (issue 35), read from console/ beside the bundle.
const consoleAssets = globSync("src/admin/console/*.{js,css}", { cwd: ROOT });
mkdirSync(join(staging, "console"));
for (const asset of consoleAssets) copyFileSync(join(ROOT, asset), join(staging, "console", basename(asset)));
writeFileSync(join(staging, "README"), "Built by npm run build from src/ (scripts/build.ts); not edited by hand.\n");
// Library files are covered by npm's record of the installed packages (ALWAYS_CHECKED), which every
// install rewrites; the project's own inputs are checked one by one.
const inputs = Object.keys(metafile.inputs)
  .filter((input) => !input.includes(":")) // built-ins, in the plugin's namespace
  .map((input) => relative(ROOT, resolve(process.cwd(), input)))
  .filter((file) => !file.startsWith("node_modules") && !file.startsWith(".."));
const files = Object.fromEntries(
  [...new Set([...inputs, ...assets, ...consoleAssets, ...ALWAYS_CHECKED])]
    .sort()
    .map((file) => [file, fileStamp(ROOT, file)]),
);
writeFileSync(join(staging, STAMP_FILE), `${JSON.stringify({ files }, null, 1)}\n`);

const previous = `${OUT}.${process.pid}.old`;
try {
  renameSync(OUT, previous);
} catch (error) {
  if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
}
try {
  renameSync(staging, OUT);
} catch (error) {
  // Another build renamed its dist/ into place first: it was made from the same sources.
  if (!["EEXIST", "ENOTEMPTY"].includes((error as NodeJS.ErrnoException).code ?? "")) throw error;
  rmSync(staging, { recursive: true, force: true });
}
rmSync(previous, { recursive: true, force: true });
process.stderr.write(`build: dist/server.mjs in ${(performance.now() - started).toFixed(0)} ms\n`);
