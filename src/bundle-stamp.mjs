// Whether dist/ was built from the sources as they are now. scripts/build.ts
// writes dist/inputs.json: the size and modification time of every file the
// bundle was made from (esbuild's own list of inputs outside node_modules,
// the assets copied beside it, the build script, package.json, and npm's
// record of the installed packages, which every install rewrites).
// src/start.mjs asks before it loads the bundle and rebuilds only when
// something differs, so a restart costs no build. Plain JavaScript, so that
// the start needs no type stripping.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";

export const STAMP_FILE = "inputs.json";

/** Files outside the bundle's inputs whose change must rebuild it, relative to the project root. */
export const ALWAYS_CHECKED = [
  "scripts/build.ts",
  "src/bundle-stamp.mjs",
  "package.json",
  "node_modules/.package-lock.json",
];

/** The stamp of one file: its size and modification time, or null when it does not exist. */
export function fileStamp(root, file) {
  try {
    const { size, mtimeMs } = statSync(join(root, file));
    return [size, mtimeMs];
  } catch {
    return null;
  }
}

/** True when `outDir` holds a bundle whose every recorded input is unchanged. */
export function bundleIsFresh(root, outDir) {
  let recorded;
  try {
    recorded = JSON.parse(readFileSync(join(outDir, STAMP_FILE), "utf8"));
  } catch {
    return false;
  }
  if (recorded === null || typeof recorded !== "object" || typeof recorded.files !== "object") return false;
  for (const [file, stamp] of Object.entries(recorded.files)) {
    const now = fileStamp(root, file);
    if (now === null ? stamp !== null : stamp === null || now[0] !== stamp[0] || now[1] !== stamp[1]) return false;
  }
  return true;
}
