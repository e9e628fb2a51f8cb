// The commands that prepare a deployment rather than its data: the
// database schema brought up to date, a signing secret, a signing key file,
// and the stored TOTP secrets re-sealed under the first MFA_ENCRYPTION_KEY.
import { writeFileSync } from "node:fs";
import { type AsymmetricAlgorithm, generatePrivateKeyPem, parsePrivateKey } from "../auth/keys.ts";
import { createRateLimits, MemoryCounterStore } from "../auth/rate-limits.ts";
import { createSecondFactors } from "../auth/second-factors.ts";
import { loadConfig } from "../config.ts";
import { readEnvironment } from "../env.ts";
import { migrations } from "../store/migrations.ts";
import { openStore } from "../store/open.ts";
import type { UserStore } from "../store/store.ts";
import { CliError, UsageError, withStore } from "./common.ts";

/** A new signing key straight into an owner-only file: a private key never passes through a terminal. */
export function generateKeyFile(args: string[]): void {
  const [algorithm, file] = args;
  if (args.length !== 2 || (algorithm !== "EdDSA" && algorithm !== "ES256"))
    throw new UsageError("key generate takes an algorithm (EdDSA or ES256) and a file");
  const pem = generatePrivateKeyPem(algorithm as AsymmetricAlgorithm);
  try {
    writeFileSync(file as string, pem, { mode: 0o600, flag: "wx" });
  } catch (error) {
    throw new CliError(`cannot write ${file}: ${(error as NodeJS.ErrnoException).code}`);
  }
  process.stdout.write(`${parsePrivateKey(algorithm as AsymmetricAlgorithm, pem).kid}\n`);
}

export async function resealSecondFactors(args: string[]): Promise<void> {
  if (args.length > 0) throw new UsageError("mfa reseal takes no arguments");
  const { resealed, unreadable } = await withStore((store, config) =>
    createSecondFactors({
      store,
      keys: config.mfa.encryptionKeys,
      signingMaterial: [...config.signingSecrets, ...config.signingKeys],
      issuer: config.mfa.totpIssuer,
      limits: createRateLimits({ ...config.rateLimit, enabled: false }, new MemoryCounterStore()),
      clock: Date.now,
    }).reseal(),
  );
  process.stdout.write(`${resealed} TOTP secret(s) sealed under the first MFA_ENCRYPTION_KEY\n`);
  if (unreadable > 0) {
    throw new CliError(
      `${unreadable} TOTP secret(s) open with none of the keys in MFA_ENCRYPTION_KEY; left as they were`,
    );
  }
}

export async function migrate(): Promise<void> {
  const { config } = loadConfig(readEnvironment());
  let store: UserStore;
  try {
    store = await openStore(config.database);
  } catch (error) {
    throw new CliError(`cannot migrate the database named by DATABASE_URL: ${(error as Error).message}`);
  }
  await store.close();
  const latest = Math.max(...migrations.map((migration) => migration.version));
  process.stdout.write(`database schema is up to date (version ${latest})\n`);
}
