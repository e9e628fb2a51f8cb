// The process: the only file that reads process.env, binds a port or handles
// signals. It honours a .env file in the working directory (real environment
// variables win), validates the configuration once, opens the store, serves,
// and on SIGTERM or SIGINT stops accepting, finishes requests in flight and
// exits 0.
import { existsSync, readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { buildApp } from "./app.ts";
import { type Env, loadConfig } from "./config.ts";
import { ConfigError } from "./errors.ts";
import { openStore } from "./store/store.ts";

/** The environment: .env file values first, then the real environment over them. */
export function readEnvironment(cwd: string = process.cwd()): Env {
  const file = `${cwd}/.env`;
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, "utf8")) : {};
  return { ...fromFile, ...process.env };
}

async function main(): Promise<void> {
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(readEnvironment());
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    process.exit(2);
  }
  const { config, notices } = loaded;
  const store = openStore(config.database);
  const app = await buildApp({ config, store });
  for (const notice of notices) app.log.info(notice);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "shutting down");
    await app.close();
    await store.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));

  await app.listen({ host: config.host, port: config.port });
}

await main();
