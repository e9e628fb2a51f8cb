// The Node arguments of `npm start` (V8 options and the entry file), read
// from package.json, so that the process tests and the benchmark start the
// service exactly as npm start does, with one place to change them.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");

export function startArguments(): string[] {
  const { scripts } = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  };
  const [program, ...args] = (scripts.start ?? "").split(/\s+/).filter(Boolean);
  if (program !== "node" || args.length === 0)
    throw new Error(`npm start is not "node [options] <entry>": ${scripts.start}`);
  return args.map((arg) => (arg.startsWith("-") ? arg : resolve(ROOT, arg)));
}
