// Branding (issue 37): the admin API (/branding, the logo, clients' logos and
// brand_color), the logo and the colours' stylesheet as served, the brand on
// the pages (the sign-in page, an application's consent and sign-in pages),
// in a mail (a real SMTP server), across two instances on one database, the
// front door at /, and the settings. Refusals and the logo's headers:
// test/security/branding.test.ts; in a browser: test/browser/branding.test.ts.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, type TestContext, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { REREAD_MS } from "../src/branding/brand-book.ts";
import { loadConfig } from "../src/config.ts";
import { ConfigError } from "../src/errors.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { UserStore } from "../src/store/store.ts";
import { admin, DEFAULT_BRANDING, GIF, PASSWORD, png, sha20 } from "./branding/fixture.ts";
import {
  buildTestApp,
  createUser,
  openPostgresSchema,
  openTestStore,
  requestToken,
  TestClock,
  testConfig,
} from "./helpers.ts";
import { MailServer } from "./mail-server.ts";
import { OIDC_KEY, pkcePair } from "./oidc/fixture.ts";

const ACME = {
  product_name: "Acme ID",
  primary_color: "#0F766E",
  support_email: "help@acme.example",
  terms_url: "https://acme.example/terms",
  privacy_url: "https://acme.example/privacy",
};
const ACME_OUT = {
  product_name: "Acme ID",
  primary_color: "#0f766e",
  support_email: "help@acme.example",
  terms_url: "https://acme.example/terms",
  privacy_url: "https://acme.example/privacy",
  logo_url: null,
  stylesheet_url: "/branding/brand.css?v=c206d78b7eea",
  sources: { product_name: "api", primary_color: "api", support_email: "api", terms_url: "api", privacy_url: "api" },
};

describe("the admin API", () => {
  test("GET, PUT (a field left out falls back to its setting), PATCH (only the fields sent; null: the setting)", async (t) => {
    const { app, store } = await buildTestApp(t);
    const headers = await admin(app, store);
    const get = await app.inject({ method: "GET", url: "/branding", headers });
    assert.equal(get.statusCode, 200);
    assert.equal(get.headers["cache-control"], "no-store");
    assert.deepEqual(get.json(), DEFAULT_BRANDING);

    const put = await app.inject({ method: "PUT", url: "/branding", headers, payload: ACME });
    assert.equal(put.statusCode, 200, put.body);
    assert.deepEqual(put.json(), ACME_OUT);
    assert.deepEqual((await app.inject({ method: "GET", url: "/branding", headers })).json(), ACME_OUT);

    const patch = await app.inject({
      method: "PATCH",
      url: "/branding",
      headers,
      payload: { product_name: "Acme Accounts", privacy_url: null },
    });
    assert.equal(patch.statusCode, 200, patch.body);
    assert.deepEqual(patch.json(), {
      ...ACME_OUT,
      product_name: "Acme Accounts",
      privacy_url: null,
      sources: { ...ACME_OUT.sources, privacy_url: "setting" },
    });

    const replaced = await app.inject({ method: "PUT", url: "/branding", headers, payload: { product_name: "Acme" } });
    assert.deepEqual(replaced.json(), {
      ...DEFAULT_BRANDING,
      product_name: "Acme",
      sources: { ...DEFAULT_BRANDING.sources, product_name: "api" },
    });
    // Each change is an audit event about the admin who made it.
    const events = await app.inject({ method: "GET", url: "/events?type=branding", headers });
    assert.deepEqual(
      (events.json() as { items: { outcome: string; user_email: string }[] }).items.map((e) => [
        e.outcome,
        e.user_email,
      ]),
      [
        ["updated", "root@example.com"],
        ["updated", "root@example.com"],
        ["updated", "root@example.com"],
      ],
    );
  });

  test("admins only: 401 without a token, 403 for a user", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, "ada@example.com", PASSWORD);
    const user = (await requestToken(app, { username: "ada@example.com", password: PASSWORD })).json().access_token;
    for (const [method, url] of [
      ["GET", "/branding"],
      ["PUT", "/branding"],
      ["PATCH", "/branding"],
      ["PUT", "/branding/logo"],
      ["DELETE", "/branding/logo"],
      ["PUT", "/clients/0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f/logo"],
      ["DELETE", "/clients/0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f/logo"],
    ] as const) {
      const anonymous = await app.inject({ method, url, payload: {} });
      assert.equal(anonymous.statusCode, 401, `${method} ${url}`);
      assert.deepEqual(anonymous.json(), { detail: "Not authenticated" });
      assert.equal(anonymous.headers["www-authenticate"], "Bearer");
      const forbidden = await app.inject({ method, url, headers: { authorization: `Bearer ${user}` }, payload: {} });
      assert.equal(forbidden.statusCode, 403, `${method} ${url}`);
      assert.deepEqual(forbidden.json(), { detail: "Not enough privileges" });
    }
  });

  test("an unreadable colour is refused with the contrast it has, and nothing changes", async (t) => {
    const { app, store } = await buildTestApp(t);
    const headers = await admin(app, store);
    const refused = await app.inject({
      method: "PATCH",
      url: "/branding",
      headers,
      payload: { primary_color: "#ffcc00" },
    });
    assert.equal(refused.statusCode, 422);
    assert.deepEqual(refused.json(), {
      detail: "primary_color #ffcc00 on white text has contrast 1.5:1; WCAG AA needs at least 4.5:1",
    });
    // White text passes, links on the page's grey background do not.
    const link = await app.inject({ method: "PUT", url: "/branding", headers, payload: { primary_color: "#767676" } });
    assert.equal(link.statusCode, 422);
    assert.deepEqual(link.json(), {
      detail:
        "primary_color #767676 as link text on the page background #f5f5f4 has contrast 4.1:1; WCAG AA needs at least 4.5:1",
    });
    const unreadable = await app.inject({
      method: "PATCH",
      url: "/branding",
      headers,
      payload: { primary_color: "blue" },
    });
    assert.equal(unreadable.statusCode, 422);
    assert.deepEqual(unreadable.json(), { detail: 'primary_color must be a colour written #RRGGBB, got "blue"' });
    const http = await app.inject({
      method: "PATCH",
      url: "/branding",
      headers,
      payload: { terms_url: "http://acme.example/t" },
    });
    assert.deepEqual(http.json(), {
      detail: 'terms_url must be an https URL (http only on a loopback host), got "http://acme.example/t"',
    });
    assert.deepEqual((await app.inject({ method: "GET", url: "/branding", headers })).json(), DEFAULT_BRANDING);
    assert.equal(await store.findBrand("service"), undefined);
  });

  test("the logo: uploaded, served by its hash with its headers, a new logo a new URL, the old one 404, deleted", async (t) => {
    const { app, store } = await buildTestApp(t);
    const headers = await admin(app, store);
    const first = png(8);
    const put = await app.inject({
      method: "PUT",
      url: "/branding/logo",
      headers: { ...headers, "content-type": "image/png" },
      payload: first,
    });
    assert.equal(put.statusCode, 200, put.body);
    const firstUrl = `/branding/logo/${await sha20(first)}.png`;
    assert.deepEqual(put.json(), { ...DEFAULT_BRANDING, logo_url: firstUrl });

    const served = await app.inject({ method: "GET", url: firstUrl });
    assert.equal(served.statusCode, 200);
    assert.equal(served.headers["content-type"], "image/png");
    assert.equal(served.headers["cache-control"], "public, max-age=31536000, immutable");
    assert.equal(served.headers["x-content-type-options"], "nosniff");
    assert.equal(served.headers["content-security-policy"], "default-src 'none'; frame-ancestors 'none'; sandbox");
    assert.deepEqual(served.rawPayload, first);

    const second = GIF;
    const replaced = await app.inject({
      method: "PUT",
      url: "/branding/logo",
      headers: { ...headers, "content-type": "image/gif" },
      payload: second,
    });
    const secondUrl = `/branding/logo/${await sha20(second)}.gif`;
    assert.deepEqual(replaced.json(), { ...DEFAULT_BRANDING, logo_url: secondUrl });
    assert.notEqual(secondUrl, firstUrl);
    assert.equal((await app.inject({ method: "GET", url: firstUrl })).statusCode, 404);
    assert.deepEqual((await app.inject({ method: "GET", url: firstUrl })).json(), { detail: "Not Found" });
    assert.equal((await app.inject({ method: "GET", url: secondUrl })).headers["content-type"], "image/gif");

    const deleted = await app.inject({ method: "DELETE", url: "/branding/logo", headers });
    assert.equal(deleted.statusCode, 204);
    assert.equal(deleted.body, "");
    assert.equal((await app.inject({ method: "GET", url: secondUrl })).statusCode, 404);
    assert.deepEqual((await app.inject({ method: "GET", url: "/branding", headers })).json(), DEFAULT_BRANDING);
  });

  test("the stylesheet: the colour as custom properties, cached for good only under its own version", async (t) => {
    const { app, store } = await buildTestApp(t);
    const headers = await admin(app, store);
    await app.inject({ method: "PATCH", url: "/branding", headers, payload: { primary_color: "#0f766e" } });
    const current = await app.inject({ method: "GET", url: "/branding/brand.css?v=c206d78b7eea" });
    assert.equal(current.statusCode, 200);
    assert.equal(current.headers["content-type"], "text/css; charset=utf-8");
    assert.equal(current.headers["cache-control"], "public, max-age=31536000, immutable");
    assert.equal(current.body, ":root {\n  --primary: #0f766e;\n  --on-primary: #ffffff;\n}\n");
    const stale = await app.inject({ method: "GET", url: "/branding/brand.css?v=d139a669343e" });
    assert.equal(stale.headers["cache-control"], "no-cache");
    assert.equal(stale.body, current.body);
  });
});

describe("the pages", () => {
  test("the sign-in page wears the brand: stylesheet, logo and name, support, terms and privacy", async (t) => {
    const { app, store } = await buildTestApp(t);
    const headers = await admin(app, store);
    const before = await app.inject({ method: "GET", url: "/sign-in" });
    assert.match(
      before.body,
      /<link rel="stylesheet" href="\/pages\/account.css">\n<link rel="stylesheet" href="\/branding\/brand.css\?v=d139a669343e">\n/,
    );
    assert.match(
      before.body,
      /<body>\n<header class="brand"><span class="brand-name">User service<\/span><\/header>\n<main>/,
    );
    assert.match(
      before.body,
      /<\/main>\n<footer class="brand">\n<p><a id="language-link" href="\/language\?continue=%2Fsign-in">Language: English<\/a><\/p>\n<\/footer>\n<\/body>/,
      "no brand footer without support, terms or privacy (the language link only)",
    );
    assert.ok(!before.body.includes("<!--brand:"));

    await app.inject({ method: "PUT", url: "/branding", headers, payload: ACME });
    const logo = png();
    await app.inject({
      method: "PUT",
      url: "/branding/logo",
      headers: { ...headers, "content-type": "image/png" },
      payload: logo,
    });
    const page = await app.inject({ method: "GET", url: "/sign-in" });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<link rel="stylesheet" href="\/branding\/brand.css\?v=c206d78b7eea">/);
    assert.ok(
      page.body.includes(
        `<header class="brand"><img class="brand-logo" src="/branding/logo/${await sha20(logo)}.png" alt="" height="40"><span class="brand-name">Acme ID</span></header>`,
      ),
      page.body,
    );
    assert.ok(
      page.body.includes(
        '<footer class="brand">\n<nav aria-label="About this service"><ul class="brand-links">' +
          '<li><a href="mailto:help@acme.example">Contact support</a></li>' +
          '<li><a href="https://acme.example/terms">Terms of service</a></li>' +
          '<li><a href="https://acme.example/privacy">Privacy</a></li></ul></nav>\n<p><a id="language-link"',
      ),
      page.body,
    );
    // The other pages too (one mark-filling hook for every page of pageDocument).
    for (const url of ["/reset-password", "/verify-email", "/account/security"]) {
      const other = await app.inject({ method: "GET", url });
      assert.ok(other.body.includes('<span class="brand-name">Acme ID</span>'), url);
    }
  });

  test("an application's consent and sign-in pages wear its name, logo and colour; others the service's", async (t) => {
    const { app, store } = await buildTestApp(t, { oidcSigningKeys: [OIDC_KEY] });
    const headers = await admin(app, store);
    await app.inject({ method: "PATCH", url: "/branding", headers, payload: { product_name: "Acme ID" } });
    const created = await app.inject({
      method: "POST",
      url: "/clients",
      headers,
      payload: {
        client_name: "Partner <App>",
        redirect_uris: ["https://rp.example/callback"],
        grant_types: ["authorization_code"],
        token_endpoint_auth_method: "none",
        brand_color: "#6D28D9",
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const client = created.json() as { client_id: string; brand_color: string };
    assert.equal(client.brand_color, "#6d28d9");
    const logo = png(8, [109, 40, 217]);
    const uploaded = await app.inject({
      method: "PUT",
      url: `/clients/${client.client_id}/logo`,
      headers: { ...headers, "content-type": "image/png" },
      payload: logo,
    });
    assert.equal(uploaded.statusCode, 200, uploaded.body);
    const logoUrl = `/branding/logo/${await sha20(logo)}.png`;
    assert.deepEqual(uploaded.json(), { client_id: client.client_id, logo_url: logoUrl });

    const { challenge } = pkcePair();
    const authorize = `/oauth/authorize?${new URLSearchParams({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: "https://rp.example/callback",
      scope: "openid",
      state: "s",
      code_challenge: challenge,
      code_challenge_method: "S256",
    })}`;
    const clientCss = `/branding/brand.css?v=03756c2d8949&#38;client=${client.client_id}`;
    const expectedHeader = `<header class="brand"><img class="brand-logo" src="${logoUrl}" alt="" height="40"><span class="brand-name">Partner &#60;App&#62;</span></header>`;

    const toSignIn = await app.inject({ method: "GET", url: authorize });
    assert.equal(toSignIn.statusCode, 303);
    const signIn = await app.inject({ method: "GET", url: toSignIn.headers.location as string });
    assert.ok(signIn.body.includes(expectedHeader), signIn.body);
    assert.ok(signIn.body.includes(`<link rel="stylesheet" href="${clientCss}">`), signIn.body);
    assert.ok(signIn.body.includes("<p>Sign-in provided by Acme ID</p>"));
    const sheet = await app.inject({ method: "GET", url: clientCss.replace("&#38;", "&") });
    assert.equal(sheet.headers["cache-control"], "public, max-age=31536000, immutable");
    assert.equal(sheet.body, ":root {\n  --primary: #6d28d9;\n  --on-primary: #ffffff;\n}\n");

    // The consent page, for a signed-in browser.
    await createUser(store, "ada@example.com", PASSWORD);
    const login = await requestToken(app, { username: "ada@example.com", password: PASSWORD });
    const opened = await app.inject({
      method: "POST",
      url: "/oauth/browser-session",
      headers: { authorization: `Bearer ${login.json().access_token}` },
    });
    const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
    const consent = await app.inject({ method: "GET", url: authorize, headers: { cookie } });
    assert.equal(consent.statusCode, 200);
    assert.match(consent.body, /<h1>Allow access\?<\/h1>/);
    assert.ok(consent.body.includes(expectedHeader), consent.body);

    // A sign-in page that continues nowhere, or to an unknown client: the service's brand.
    for (const url of ["/sign-in", `/sign-in?continue=${encodeURIComponent("/oauth/authorize?client_id=nobody")}`]) {
      const plain = await app.inject({ method: "GET", url });
      assert.ok(plain.body.includes('<header class="brand"><span class="brand-name">Acme ID</span></header>'), url);
    }

    // The client's colour is checked like the brand's; deleting its logo shows the service's (none).
    const refused = await app.inject({
      method: "PATCH",
      url: `/clients/${client.client_id}`,
      headers,
      payload: { brand_color: "#ffcc00" },
    });
    assert.equal(refused.statusCode, 422);
    assert.deepEqual(refused.json(), {
      detail: "brand_color #ffcc00 on white text has contrast 1.5:1; WCAG AA needs at least 4.5:1",
    });
    assert.equal(
      (await app.inject({ method: "DELETE", url: `/clients/${client.client_id}/logo`, headers })).statusCode,
      204,
    );
    const after = await app.inject({ method: "GET", url: toSignIn.headers.location as string });
    assert.ok(
      after.body.includes('<header class="brand"><span class="brand-name">Partner &#60;App&#62;</span></header>'),
    );
  });
});

describe("while the database cannot be read", () => {
  test("a page still shows, in the brand of the settings", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const failing: UserStore = { ...store, findBrand: () => Promise.reject(new Error("the database is away")) };
    const app = await buildApp({ config: testConfig(), store: failing, clock: clock.read });
    t.after(() => app.close());
    const page = await app.inject("/sign-in");
    assert.equal(page.statusCode, 200);
    assert.ok(page.body.includes('<header class="brand"><span class="brand-name">User service</span></header>'));
    assert.ok(page.body.includes('<link rel="stylesheet" href="/branding/brand.css?v=d139a669343e">'));
  });
});

describe("two instances on one database", () => {
  /** Two stores on one database: an SQLite file, or (TEST_BACKEND=postgres) one PostgreSQL schema. */
  async function twoStores(t: TestContext, clock: TestClock): Promise<[UserStore, UserStore]> {
    if (process.env.TEST_BACKEND === "postgres") {
      const { store, schema } = await openPostgresSchema(t, "branding", clock.read);
      const url = process.env.POSTGRES_URL as string;
      const other = await openPostgresStore({ url, schema, poolSize: 2, timeoutMs: 10_000, clock: clock.read });
      t.after(() => other.close());
      return [store, other];
    }
    const dir = mkdtempSync(join(tmpdir(), "branding-"));
    const path = join(dir, "users.db");
    const stores = [await openSqliteStore(path, clock.read), await openSqliteStore(path, clock.read)] as const;
    t.after(async () => {
      for (const store of stores) await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return [...stores];
  }

  test("a change through one shows on the other within the re-read bound", async (t) => {
    const clock = new TestClock();
    const [storeA, storeB] = await twoStores(t, clock);
    const a = await buildApp({ config: testConfig(), store: storeA, clock: clock.read });
    const b = await buildApp({ config: testConfig(), store: storeB, clock: clock.read });
    t.after(async () => {
      await a.close();
      await b.close();
    });
    const name = async () => /<span class="brand-name">([^<]*)<\/span>/.exec((await b.inject("/sign-in")).body)?.[1];
    assert.equal(await name(), "User service");
    const headers = await admin(a, storeA);
    assert.equal(
      (await a.inject({ method: "PATCH", url: "/branding", headers, payload: { product_name: "Acme ID" } })).statusCode,
      200,
    );
    // The instance that changed it shows it at once; the other within REREAD_MS.
    assert.match((await a.inject("/sign-in")).body, /<span class="brand-name">Acme ID<\/span>/);
    clock.now += REREAD_MS - 1;
    assert.equal(await name(), "User service");
    clock.now += 1;
    assert.equal(await name(), "Acme ID");
  });
});

describe("mails", () => {
  const smtp = new MailServer();
  before(() => smtp.start());
  after(() => smtp.stop());

  test("a mail names the product (sender and sign-off), its link in the colour, the logo under PUBLIC_URL", async (t) => {
    const base = testConfig();
    const { app, store } = await buildTestApp(t, {
      publicUrl: "https://id.acme.example",
      mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
    });
    const headers = await admin(app, store);
    await app.inject({ method: "PUT", url: "/branding", headers, payload: ACME });
    const logo = png();
    await app.inject({
      method: "PUT",
      url: "/branding/logo",
      headers: { ...headers, "content-type": "image/png" },
      payload: logo,
    });
    const email = `branded.${process.pid}@example.com`;
    await createUser(store, email, PASSWORD);
    const asked = await app.inject({ method: "POST", url: "/auth/password-reset-requests", payload: { email } });
    assert.equal(asked.statusCode, 202);
    const [mail] = await smtp.mailsTo(email);
    assert.ok(mail);
    assert.equal(mail.parsed.from?.text, '"Acme ID" <no-reply@service.test>');
    assert.ok(mail.text.endsWith("\n— Acme ID\n"), mail.text);
    assert.ok(
      mail.html.includes(
        `<p><img src="https://id.acme.example/branding/logo/${await sha20(logo)}.png" alt="Acme ID" height="40"></p>`,
      ),
      mail.html,
    );
    assert.match(mail.html, /<a href="[^"]+"><span style="color:#0f766e">Choose a new password<\/span><\/a>/);
    assert.ok(mail.html.includes("<p>— Acme ID</p></body>"));
  });
});

describe("the front door", () => {
  test("a page in the reader's language with where to go; the console only when it is served; HEAD", async (t) => {
    const { app, store } = await buildTestApp(t);
    const headers = await admin(app, store);
    await app.inject({ method: "PATCH", url: "/branding", headers, payload: { product_name: "Acme ID" } });
    const page = await app.inject({ method: "GET", url: "/", headers: { "accept-language": "de-DE,de;q=0.9" } });
    assert.equal(page.statusCode, 200);
    assert.equal(page.headers["content-type"], "text/html; charset=utf-8");
    assert.equal(page.headers["cache-control"], "no-store");
    assert.match(page.headers["content-security-policy"] as string, /^default-src 'none';.*script-src 'self'/);
    assert.match(page.body, /<html lang="de" dir="ltr">/);
    assert.match(page.body, /<h1>Willkommen bei Acme ID<\/h1>/);
    assert.deepEqual(
      [...page.body.matchAll(/<li><a href="([^"]+)">([^<]+)<\/a>/g)].map((m) => [m[1], m[2]]),
      [
        ["/sign-in", "Anmelden"],
        ["/account/security", "Ihr Konto"],
        ["/docs", "API-Dokumentation"],
      ],
    );
    assert.ok(!page.body.includes("<script"));
    const head = await app.inject({ method: "HEAD", url: "/" });
    assert.equal(head.statusCode, 200);
    assert.equal(head.headers["content-type"], "text/html; charset=utf-8");
    assert.equal(head.body, "");
  });

  test("with the admin console on, it is listed", async (t) => {
    const { app } = await buildTestApp(t, {
      oidcSigningKeys: [OIDC_KEY],
      adminConsole: { enabled: true, requireMfa: false },
    });
    const page = await app.inject({ method: "GET", url: "/" });
    assert.match(
      page.body,
      /<li><a href="\/admin\/">Admin console<\/a><p class="hint">For the administrators of User service\.<\/p><\/li>/,
    );
  });

  test("FRONT_DOOR=<url>: a redirect", async (t) => {
    const { app } = await buildTestApp(t, {
      branding: {
        defaults: {
          productName: "Acme",
          primaryColor: "#1d4ed8",
          supportEmail: null,
          termsUrl: null,
          privacyUrl: null,
        },
        frontDoor: { redirect: "https://acme.example/" },
      },
    });
    const answer = await app.inject({ method: "GET", url: "/" });
    assert.equal(answer.statusCode, 302);
    assert.equal(answer.headers.location, "https://acme.example/");
    assert.equal(answer.body, "");
  });
});

describe("settings", () => {
  const cwd = () => mkdtempSync(join(tmpdir(), "branding-config-"));
  const read = (env: Record<string, string>) => loadConfig({ SIGNING_SECRET: "s".repeat(32), ...env }, cwd());

  test("defaults, and every setting read", () => {
    assert.deepEqual(read({}).config.branding, {
      defaults: {
        productName: "User service",
        primaryColor: "#1d4ed8",
        supportEmail: null,
        termsUrl: null,
        privacyUrl: null,
      },
      frontDoor: "page",
    });
    assert.deepEqual(
      read({
        BRAND_PRODUCT_NAME: "Acme ID",
        BRAND_PRIMARY_COLOR: "#0F766E",
        BRAND_SUPPORT_EMAIL: "help@acme.example",
        BRAND_TERMS_URL: "https://acme.example/terms",
        BRAND_PRIVACY_URL: "http://127.0.0.1:3000/privacy",
        FRONT_DOOR: "https://acme.example/",
      }).config.branding,
      {
        defaults: {
          productName: "Acme ID",
          primaryColor: "#0f766e",
          supportEmail: "help@acme.example",
          termsUrl: "https://acme.example/terms",
          privacyUrl: "http://127.0.0.1:3000/privacy",
        },
        frontDoor: { redirect: "https://acme.example/" },
      },
    );
  });

  for (const [env, message] of [
    [
      { BRAND_PRIMARY_COLOR: "#ffff00" },
      "BRAND_PRIMARY_COLOR: #ffff00 on white text has contrast 1.0:1; WCAG AA needs at least 4.5:1",
    ],
    [{ BRAND_PRIMARY_COLOR: "teal" }, 'BRAND_PRIMARY_COLOR: must be a colour written #RRGGBB, got "teal"'],
    [
      { BRAND_TERMS_URL: "http://acme.example/terms" },
      'BRAND_TERMS_URL: must be an https URL (http only on a loopback host), got "http://acme.example/terms"',
    ],
    [
      { BRAND_SUPPORT_EMAIL: "Help <help@acme.example>" },
      'BRAND_SUPPORT_EMAIL: must be one e-mail address such as support@example.com, got "Help <help@acme.example>"',
    ],
    [{ FRONT_DOOR: "elsewhere" }, 'FRONT_DOOR: must be page or an absolute https URL, got "elsewhere"'],
  ] as const) {
    test(`refused: ${Object.keys(env)[0]}=${Object.values(env)[0]}`, () => {
      assert.throws(
        () => read(env),
        (error: unknown) => error instanceof ConfigError && error.message === message,
      );
    });
  }
});
