// docs/reference/configuration.md is what scripts/docs-config.ts writes from
// the settings' declarations: a setting declared, changed or removed without
// `npm run docs:config` fails here. And the page lists every setting the code
// reads: loadConfig is run on environments that reach every branch (every
// provider kind, metrics on, a first admin, registration on), recording each
// name it reads, and each must be a declared one; each declared one must be
// read by some run, so the page names no setting the code forgot.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CONFIGURATION_FILE, configurationReference } from "../scripts/docs-config.ts";
import { type Env, loadConfig, SETTINGS_SECTIONS } from "../src/config.ts";

test("the configuration reference is the one the script writes from the declarations", () => {
  const written = readFileSync(CONFIGURATION_FILE, "utf8");
  assert.ok(
    written === configurationReference(),
    "docs/reference/configuration.md differs from the settings' declarations: run `npm run docs:config` and commit the result",
  );
});

const SECRET = "s".repeat(32);
const provider = (name: string, values: Record<string, string>) =>
  Object.fromEntries(Object.entries(values).map(([key, value]) => [`UPSTREAM_${name}_${key}`, value]));
const client = { CLIENT_ID: "id", CLIENT_SECRET: "secret" };
/** Between them, every branch that reads a setting. */
const ENVIRONMENTS: Env[] = [
  {},
  {
    SIGNING_SECRET: SECRET,
    DATABASE_URL: "sqlite::memory:",
    PUBLIC_URL: "https://id.example.com",
    METRICS_PORT: "9464",
    FIRST_ADMIN_EMAIL: "root@example.com",
    FIRST_ADMIN_PASSWORD: "a long admin passphrase",
    DYNAMIC_CLIENT_REGISTRATION: "on",
    REGISTRATION_ACCESS_TOKEN: SECRET,
    UPSTREAM_PROVIDERS: "microsoft,github,corp",
    ...provider("MICROSOFT", { ...client, TENANT: "contoso.onmicrosoft.com" }),
    ...provider("GITHUB", client),
    ...provider("CORP", { ...client, ISSUER: "https://id.corp.example" }),
  },
  { SIGNING_ALGORITHM: "EdDSA", DATABASE_URL: "sqlite::memory:" },
];

function namesRead(env: Env): Set<string> {
  const read = new Set<string>();
  const watched = new Proxy(env, {
    get(target, name, receiver) {
      if (typeof name === "string") read.add(name);
      return Reflect.get(target, name, receiver);
    },
  });
  const cwd = mkdtempSync(join(tmpdir(), "docs-config-"));
  try {
    loadConfig(watched, cwd);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
  return read;
}

/** A declared name as a pattern: `UPSTREAM_<NAME>_LABEL` stands for every provider's (names are [A-Z0-9_<>]). */
const pattern = (declared: string) => new RegExp(`^${declared.split("<NAME>").join("[A-Z0-9_]+")}$`);

test("the reference lists every setting the code reads, and the code reads every setting it lists", () => {
  const declared = SETTINGS_SECTIONS.flatMap((section) => section.settings.map((setting) => setting.name));
  assert.equal(new Set(declared).size, declared.length, "a setting is declared twice");
  const patterns = declared.map((name) => ({ name, pattern: pattern(name) }));
  const read = new Set(ENVIRONMENTS.flatMap((env) => [...namesRead(env)]));
  const undeclared = [...read].filter((name) => !patterns.some(({ pattern }) => pattern.test(name)));
  assert.deepEqual(undeclared, [], "read by loadConfig but not in the configuration reference");
  const unread = patterns
    .filter(({ pattern }) => ![...read].some((name) => pattern.test(name)))
    .map(({ name }) => name);
  assert.deepEqual(unread, [], "in the configuration reference but never read by loadConfig");
});
