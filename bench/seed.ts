// Fills an SQLite database with many users fast: the schema comes from the
// service's own migrations (openSqliteStore), then rows go in through one
// prepared statement inside one transaction, all sharing one real Argon2id
// hash. A million rows take seconds, not the hours a million sign-ups would.
// Also registers the benchmark's OAuth clients, through the client registry.
import { DatabaseSync } from "node:sqlite";
import { type ClientMetadataInput, clientMetadata, createClientRegistry } from "../src/oidc/clients.ts";
import { newId } from "../src/store/ids.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";

/** Inserts `count` users (`${prefix}${i}@example.com`), all with `hashedPassword`. */
export async function seedUsers(path: string, count: number, hashedPassword: string, prefix = "seed"): Promise<void> {
  await (await openSqliteStore(path)).close();
  // The service may have the file open (the code exchange group seeds beside it): wait for its locks.
  const db = new DatabaseSync(path, { timeout: 5000 });
  const insert = db.prepare(
    "INSERT INTO users (id, email, hashed_password, full_name, is_active, is_admin, created_at, updated_at) VALUES (?, ?, ?, NULL, 1, 0, ?, ?)",
  );
  const stamp = new Date().toISOString();
  db.exec("BEGIN");
  for (let i = 0; i < count; i++) insert.run(newId(), `${prefix}${i}@example.com`, hashedPassword, stamp, stamp);
  db.exec("COMMIT");
  db.close();
}

/** Registers a confidential client for client_credentials in the service's SQLite database; its id and secret. */
export function registerBenchClient(path: string): Promise<{ id: string; secret: string }> {
  return registerClient(path, { client_name: "Bench", grant_types: ["client_credentials"], scope: "bench" });
}

/** Registers a public client (a TV app) for the device authorization grant; its id. */
export async function registerDeviceClient(path: string): Promise<string> {
  return (
    await registerClient(path, {
      client_name: "Bench TV",
      grant_types: ["urn:ietf:params:oauth:grant-type:device_code"],
      token_endpoint_auth_method: "none",
      scope: "openid",
    })
  ).id;
}

/**
 * Registers a confidential first-party app (no consent page) that signs users in with the code flow,
 * sending the browser back to `redirectUri`; its id and secret.
 */
export function registerCodeClient(path: string, redirectUri: string): Promise<{ id: string; secret: string }> {
  return registerClient(path, {
    client_name: "Bench app",
    redirect_uris: [redirectUri],
    scope: "openid email",
    first_party: true,
  });
}

async function registerClient(path: string, input: ClientMetadataInput): Promise<{ id: string; secret: string }> {
  const store = await openSqliteStore(path);
  try {
    const metadata = clientMetadata(input);
    const { client, secret } = await createClientRegistry(store).register(metadata, {
      userId: null,
      clientAddress: null,
    });
    return { id: client.id, secret: secret as string };
  } finally {
    await store.close();
  }
}
