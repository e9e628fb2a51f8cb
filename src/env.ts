// The one reader of the process environment. A .env file in the working
// directory is honoured; variables set in the real environment win over it.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseEnv } from "node:util";
import type { Env } from "./settings/declare.ts";

export function readEnvironment(cwd: string = process.cwd()): Env {
  const file = join(cwd, ".env");
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, "utf8")) : {};
  return { ...fromFile, ...process.env };
}
