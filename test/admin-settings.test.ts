// GET /admin/settings (issue 35): the configuration as the service read it,
// section by section from the configuration reference's declarations, each
// setting's value, default and whether it was set; and the features that are
// on. Secrets never shown: test/security/admin-api.test.ts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isSecretSetting } from "../src/admin-api/settings-routes.ts";
import { buildApp } from "../src/app.ts";
import { loadConfig, SETTINGS_SECTIONS } from "../src/config.ts";
import { bearer, buildTestApp, loginToken, openTestStore, passwords, TestClock } from "./helpers.ts";

const PASSWORD = "correct horse battery";

interface SettingOut {
  name: string;
  set: boolean;
  secret: boolean;
  value: string | null;
  default: string;
}

describe("GET /admin/settings", () => {
  test("a config built by hand: every declared section and setting, unset, with its default", async (t) => {
    const { app, store } = await buildTestApp(t);
    await store.create({ email: "root@example.com", hashedPassword: await passwords.hash(PASSWORD), isAdmin: true });
    const response = await app.inject({
      method: "GET",
      url: "/admin/settings",
      headers: bearer(await loginToken(app, "root@example.com", PASSWORD)),
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers["cache-control"], "no-store");
    const body = response.json() as { sections: { title: string; module: string; settings: SettingOut[] }[] };
    assert.deepEqual(
      body.sections.map(({ title, module, settings }) => ({ title, module, names: settings.map((s) => s.name) })),
      SETTINGS_SECTIONS.map(({ title, module, settings }) => ({ title, module, names: settings.map((s) => s.name) })),
    );
    const all = body.sections.flatMap((section) => section.settings);
    const byName = (name: string) => all.find((setting) => setting.name === name);
    assert.deepEqual(byName("PORT"), { name: "PORT", set: false, secret: false, value: "8000", default: "`8000`" });
    assert.deepEqual(byName("PUBLIC_URL"), {
      name: "PUBLIC_URL",
      set: false,
      secret: false,
      value: null,
      default: "unset",
    });
    assert.deepEqual(byName("SIGNING_SECRET"), {
      name: "SIGNING_SECRET",
      set: false,
      secret: true,
      value: "unset",
      default: "generated",
    });
    assert.ok(all.every((setting) => setting.set === false));
    assert.deepEqual(response.json().features, {
      database: "sqlite",
      redis: false,
      oidc: false,
      upstream_providers: [],
      webhooks: true,
      mfa_encryption_key: true,
      mail_transport: "smtp",
      dynamic_client_registration: false,
      metrics: false,
      signing_algorithm: "HS256",
    });
  });

  test("settings as read from the environment: values as given, one entry per provider for a pattern", async (t) => {
    const env = {
      SIGNING_SECRET: "signing-secret-one-0123456789-abcdefghij",
      DATABASE_URL: "sqlite::memory:",
      PORT: " 9000 ",
      LOG_LEVEL: "silent",
      CORS_ORIGINS: "",
      UPSTREAM_PROVIDERS: "github,corp",
      UPSTREAM_GITHUB_CLIENT_ID: "gh-client",
      UPSTREAM_GITHUB_CLIENT_SECRET: "gh-client-secret-0123456789-abcdefgh",
      UPSTREAM_CORP_CLIENT_ID: "corp-client",
      UPSTREAM_CORP_CLIENT_SECRET: "corp-client-secret-0123456789-abcdefgh",
      UPSTREAM_CORP_ISSUER: "https://id.corp.example",
      NOT_A_SETTING: "ignored",
    };
    const { config } = loadConfig(env, "/nonexistent");
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const app = await buildApp({ config, store, clock: clock.read });
    t.after(async () => {
      await app.close();
      await store.close();
    });
    await store.create({ email: "root@example.com", hashedPassword: await passwords.hash(PASSWORD), isAdmin: true });
    const response = await app.inject({
      method: "GET",
      url: "/admin/settings",
      headers: bearer(await loginToken(app, "root@example.com", PASSWORD)),
    });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as { sections: { title: string; settings: SettingOut[] }[] };
    const all = body.sections.flatMap((section) => section.settings);
    const byName = (name: string) => all.filter((setting) => setting.name === name);
    assert.deepEqual(byName("PORT"), [{ name: "PORT", set: true, secret: false, value: "9000", default: "`8000`" }]);
    // Empty is unset, as the service reads it.
    assert.deepEqual(byName("CORS_ORIGINS"), [
      { name: "CORS_ORIGINS", set: false, secret: false, value: null, default: "unset" },
    ]);
    assert.deepEqual(byName("DATABASE_URL"), [
      { name: "DATABASE_URL", set: true, secret: true, value: "set", default: "`sqlite:data/users.db`" },
    ]);
    const upstream = body.sections.find((section) => section.title === "Upstream sign-in")?.settings ?? [];
    assert.deepEqual(
      upstream.filter((setting) => setting.name.includes("CLIENT")).map(({ name, value }) => ({ name, value })),
      [
        { name: "UPSTREAM_CORP_CLIENT_ID", value: "corp-client" },
        { name: "UPSTREAM_GITHUB_CLIENT_ID", value: "gh-client" },
        { name: "UPSTREAM_CORP_CLIENT_SECRET", value: "set" },
        { name: "UPSTREAM_GITHUB_CLIENT_SECRET", value: "set" },
      ],
    );
    // A pattern no name was given under is listed once, unset.
    assert.deepEqual(byName("UPSTREAM_<NAME>_LABEL"), [
      {
        name: "UPSTREAM_<NAME>_LABEL",
        set: false,
        secret: false,
        value: null,
        default: "the preset's name, else the name",
      },
    ]);
    assert.ok(!response.body.includes("NOT_A_SETTING"));
    assert.deepEqual(response.json().features.upstream_providers, ["github", "corp"]);
  });

  test("which declared settings are secret, pinned: a new setting that holds a secret is added to the rule and here", () => {
    const declared = SETTINGS_SECTIONS.flatMap((section) => section.settings.map((setting) => setting.name));
    assert.deepEqual(declared.filter(isSecretSetting), [
      "DATABASE_URL",
      "REDIS_URL",
      "SIGNING_SECRET",
      "FIRST_ADMIN_PASSWORD",
      "MAIL_URL",
      "MFA_ENCRYPTION_KEY",
      "INTROSPECTION_CLIENTS",
      "REGISTRATION_ACCESS_TOKEN",
      "UPSTREAM_<NAME>_CLIENT_SECRET",
    ]);
  });
});
