// The process: the only file that binds a port or handles signals. It reads
// the environment (env.ts), validates the configuration once, opens the
// store, serves, and on SIGTERM or SIGINT stops accepting, finishes requests
// in flight and exits 0.
import { buildApp } from "./app.ts";
import { createPasswordHasher } from "./auth/passwords.ts";
import { loadConfig } from "./config.ts";
import { readEnvironment } from "./env.ts";
import { ConfigError } from "./errors.ts";
import { openStore } from "./store/store.ts";
import { ensureFirstAdmin } from "./users/first-admin.ts";

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
  const store = await openStore(config.database);
  const app = await buildApp({ config, store });
  for (const notice of notices) app.log.info(notice);
  if (!config.rateLimit.enabled) app.log.warn("RATE_LIMIT is off: logins and sign-ups are not rate limited");
  if (config.firstAdmin) {
    const outcome = await ensureFirstAdmin(store, createPasswordHasher(config.argon2), config.firstAdmin);
    app.log.info({ email: config.firstAdmin.email, outcome }, "first admin from FIRST_ADMIN_EMAIL");
  }

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
