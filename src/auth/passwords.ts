// Password hashing: Argon2id with OWASP's minimum parameters (19 MiB, t=2,
// p=1). @node-rs/argon2 runs every hash and verify as an async native task on
// libuv's thread pool, so the event loop keeps serving GET /me meanwhile.
// The spec leaves the algorithm open ("not shown"); this is the choice.
import { type Algorithm, hash, verify } from "@node-rs/argon2";

export const ARGON2ID_PARAMS = {
  algorithm: 2 as Algorithm.Argon2id, // Argon2id; the package's enum is a const enum, not importable as a value
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2ID_PARAMS);
}

/** False for a wrong password and for a stored value that is not a usable hash. */
export async function verifyPassword(storedHash: string, password: string): Promise<boolean> {
  try {
    return await verify(storedHash, password);
  } catch {
    return false;
  }
}

let dummyHash: Promise<string> | undefined;

/**
 * Spends the same hash work as a real verify and always answers false. Login
 * calls it for an unknown e-mail so that the response time does not tell an
 * unknown account from a wrong password (spec, Authentication: no enumeration).
 */
export async function verifyAgainstDummy(password: string): Promise<false> {
  dummyHash ??= hashPassword("dummy password that no account has");
  await verifyPassword(await dummyHash, password);
  return false;
}
