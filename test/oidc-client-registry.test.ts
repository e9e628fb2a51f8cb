// The client registry below the HTTP layer: the metadata rules (RFC 7591, OpenID Connect
// Registration), redirect-URI matching (exact; loopback on any port, RFC 8252 section 7.3), and the
// stored registry on the backend under test: secrets shown once and stored as hashes, authentication
// by method, rotation with a grace period on an injected clock, removal, the public clients' origins.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CACHE_TTL_MS,
  clientMetadata,
  createClientRegistry,
  hashClientSecret,
  InvalidClientMetadata,
  matchRedirectUri,
} from "../src/oidc/clients.ts";
import { openTestStore, TestClock } from "./helpers.ts";

const WEB = {
  client_name: "Grafana",
  redirect_uris: ["https://grafana.example.com/login/generic_oauth"],
};

test("metadata: RFC 7591 defaults for a web app", () => {
  assert.deepEqual(clientMetadata(WEB), {
    name: "Grafana",
    redirectUris: ["https://grafana.example.com/login/generic_oauth"],
    postLogoutRedirectUris: [],
    grantTypes: ["authorization_code"],
    responseTypes: ["code"],
    tokenEndpointAuthMethod: "client_secret_basic",
    scope: "openid profile email",
    backchannelLogoutUri: null,
    firstParty: false,
    resources: [],
    resourceServer: false,
    requirePushedAuthorizationRequests: false,
    dpopBoundAccessTokens: false,
    brandColor: null,
  });
});

test("metadata: a service with client_credentials needs no redirect URI and has no response types", () => {
  assert.deepEqual(
    clientMetadata({
      client_name: "Billing",
      grant_types: ["client_credentials"],
      scope: "invoices:read  invoices:write",
    }),
    {
      name: "Billing",
      redirectUris: [],
      postLogoutRedirectUris: [],
      grantTypes: ["client_credentials"],
      responseTypes: [],
      tokenEndpointAuthMethod: "client_secret_basic",
      scope: "invoices:read invoices:write",
      backchannelLogoutUri: null,
      firstParty: false,
      resources: [],
      resourceServer: false,
      requirePushedAuthorizationRequests: false,
      dpopBoundAccessTokens: false,
      brandColor: null,
    },
  );
});

test("metadata: refusals name the field and RFC 7591's error code", () => {
  const cases: [object, string, string][] = [
    [
      { ...WEB, redirect_uris: ["http://grafana.example.com/cb"] },
      "invalid_redirect_uri",
      "redirect_uris: http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https",
    ],
    [
      { ...WEB, redirect_uris: ["https://a.example/cb#x"] },
      "invalid_redirect_uri",
      "redirect_uris: must not have a fragment",
    ],
    [
      { ...WEB, redirect_uris: ["https://*.example/cb"] },
      "invalid_redirect_uri",
      "redirect_uris: wildcards are not allowed (redirect URIs match exactly)",
    ],
    [{ ...WEB, redirect_uris: ["/cb"] }, "invalid_redirect_uri", "redirect_uris: not an absolute URI"],
    [
      { ...WEB, redirect_uris: ["https://u:p@a.example/cb"] },
      "invalid_redirect_uri",
      "redirect_uris: must not carry credentials",
    ],
    [
      { ...WEB, redirect_uris: ["javascript:alert(1)"] },
      "invalid_redirect_uri",
      "redirect_uris: must be https, http on a loopback host, or (for a public client) a private-use scheme such as com.example.app:/callback",
    ],
    [
      { ...WEB, redirect_uris: ["com.example.app:/cb"] },
      "invalid_redirect_uri",
      "redirect_uris: must be https, http on a loopback host, or (for a public client) a private-use scheme such as com.example.app:/callback",
    ],
    [
      { ...WEB, redirect_uris: [] },
      "invalid_redirect_uri",
      "redirect_uris: at least one is required with authorization_code",
    ],
    [
      { ...WEB, post_logout_redirect_uris: ["http://a.example/"] },
      "invalid_redirect_uri",
      "post_logout_redirect_uris: http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https",
    ],
    [
      { ...WEB, grant_types: ["password"] },
      "invalid_client_metadata",
      "grant_types: 'password' is not supported (authorization_code, refresh_token, client_credentials, urn:ietf:params:oauth:grant-type:device_code)",
    ],
    [
      { ...WEB, grant_types: ["refresh_token"] },
      "invalid_client_metadata",
      "grant_types: refresh_token only comes with authorization_code or urn:ietf:params:oauth:grant-type:device_code",
    ],
    [
      { ...WEB, response_types: ["token"] },
      "invalid_client_metadata",
      "response_types: 'token' is not supported (only 'code')",
    ],
    [
      { ...WEB, response_types: [] },
      "invalid_client_metadata",
      "response_types: 'code' goes with the grant type authorization_code, and only with it",
    ],
    [
      { ...WEB, token_endpoint_auth_method: "private_key_jwt" },
      "invalid_client_metadata",
      "token_endpoint_auth_method: 'private_key_jwt' is not supported (client_secret_basic, client_secret_post, none)",
    ],
    [
      { ...WEB, token_endpoint_auth_method: "none", grant_types: ["authorization_code", "client_credentials"] },
      "invalid_client_metadata",
      "grant_types: client_credentials needs a confidential client (a secret), not 'none'",
    ],
    [
      { client_name: "x", token_endpoint_auth_method: "none", grant_types: [] },
      "invalid_client_metadata",
      "grant_types: at least one is required",
    ],
    [{ ...WEB, scope: 'openid "x"' }, "invalid_client_metadata", "scope: not a list of scope tokens"],
    [{ ...WEB, client_name: "  " }, "invalid_client_metadata", "client_name: required"],
    [
      { ...WEB, backchannel_logout_uri: "ftp://a.example/x" },
      "invalid_client_metadata",
      "backchannel_logout_uri: must be http or https",
    ],
  ];
  for (const [input, code, detail] of cases) {
    assert.throws(
      () => clientMetadata(input),
      (error: unknown) =>
        error instanceof InvalidClientMetadata &&
        error.status === 422 &&
        error.code === code &&
        error.detail === detail,
      JSON.stringify(input),
    );
  }
});

test("metadata: native apps may use loopback and private-use redirects", () => {
  const native = clientMetadata({
    client_name: "Desktop",
    token_endpoint_auth_method: "none",
    grant_types: ["authorization_code", "refresh_token"],
    redirect_uris: ["http://127.0.0.1/callback", "com.example.desktop:/oauth", "http://localhost:3000/cb"],
  });
  assert.deepEqual(native.redirectUris, [
    "http://127.0.0.1/callback",
    "com.example.desktop:/oauth",
    "http://localhost:3000/cb",
  ]);
});

test("redirect URIs match exactly; a native app's loopback IP literal on any port (RFC 8252 section 7.3)", () => {
  const registered = [
    "https://app.example/cb",
    "http://127.0.0.1/callback",
    "http://[::1]:8000/cb?x=1",
    "http://localhost:3000/cb",
  ];
  const cases: [string, boolean][] = [
    ["https://app.example/cb", true],
    ["https://app.example/cb/", false],
    ["https://APP.example/cb", false],
    ["https://app.example/cb?x=1", false],
    ["https://app.example/cb#f", false],
    ["https://app.example:443/cb", false],
    ["https://app.example/CB", false],
    ["https://app.example/cb/../cb", false],
    ["http://127.0.0.1/callback", true],
    ["http://127.0.0.1:51004/callback", true],
    ["http://127.0.0.1:51004/callback/x", false],
    ["http://127.0.0.1:51004/other", false],
    ["http://[::1]:9/cb?x=1", true],
    ["http://[::1]/cb?x=1", true],
    ["http://[::1]:9/cb?x=2", false],
    ["http://127.0.0.1:9/cb?x=1", false],
    ["http://localhost:3000/cb", true],
    ["http://localhost:3001/cb", false],
    ["https://127.0.0.1:5000/callback", false],
    ["http://127.0.0.1.evil.example/callback", false],
    ["http://127.0.0.1:5000@evil.example/callback", false],
    ["http://127.0.0.1:65535/callback", true],
    ["http://127.0.0.1:65536/callback", false],
    ["http://127.0.0.1:99999/callback", false],
    ["http://127.0.0.1:0/callback", false],
    ["http://127.0.0.1:08080/callback", false],
    ["http://127.0.0.1:/callback", false],
  ];
  const native = { redirectUris: registered, tokenEndpointAuthMethod: "none" as const };
  for (const [presented, expected] of cases) assert.equal(matchRedirectUri(native, presented), expected, presented);
});

test("a confidential (web) client's loopback redirect matches exactly, port included (RFC 9700 section 2.1)", () => {
  const registered = ["http://127.0.0.1:8080/callback", "http://[::1]:8000/cb", "http://localhost:3000/cb"];
  const cases: [string, boolean][] = [
    ["http://127.0.0.1:8080/callback", true],
    ["http://127.0.0.1:8081/callback", false],
    ["http://127.0.0.1/callback", false],
    ["http://[::1]:8000/cb", true],
    ["http://[::1]:9/cb", false],
    ["http://localhost:3000/cb", true],
    ["http://localhost:3001/cb", false],
  ];
  for (const method of ["client_secret_basic", "client_secret_post"] as const) {
    const web = { redirectUris: registered, tokenEndpointAuthMethod: method };
    for (const [presented, expected] of cases) assert.equal(matchRedirectUri(web, presented), expected, presented);
  }
});

test("registry: secret once, hashed; authentication by method; rotation with grace; removal", async (t) => {
  const clock = new TestClock();
  const store = await openTestStore(t, clock.read);
  const clients = createClientRegistry(store, clock.read);
  const admin = { userId: null, clientAddress: "127.0.0.1" };

  const { client, secret } = await clients.register(
    clientMetadata({ client_name: "Billing", grant_types: ["client_credentials"], scope: "invoices:read" }),
    admin,
  );
  assert.ok(secret !== undefined && /^[A-Za-z0-9_-]{43}$/.test(secret));
  const stored = await store.findClient(client.id);
  assert.equal(stored?.secretHash, hashClientSecret(secret));
  assert.ok(!JSON.stringify(stored).includes(secret));
  assert.deepEqual(await clients.find(client.id), client);
  assert.equal(client.confidential, true);
  assert.equal(client.registeredBy, "admin");

  const basic = (s: string) => ({ method: "client_secret_basic" as const, clientId: client.id, secret: s });
  assert.deepEqual(await clients.authenticate(basic(secret)), client);
  assert.equal(await clients.authenticate(basic(`${secret}x`)), undefined);
  assert.equal(await clients.authenticate({ method: "client_secret_post", clientId: client.id, secret }), undefined);
  assert.equal(await clients.authenticate({ method: "none", clientId: client.id }), undefined);
  assert.equal(await clients.authenticate({ ...basic(secret), clientId: "not-a-uuid" }), undefined);
  assert.equal(
    await clients.authenticate({ ...basic(secret), clientId: "0190a000-0000-7000-8000-000000000000" }),
    undefined,
  );

  const rotated = await clients.rotateSecret(client.id, 60, admin);
  assert.ok(rotated?.secret !== undefined && rotated.secret !== secret);
  assert.ok(await clients.authenticate(basic(rotated.secret)));
  assert.ok(await clients.authenticate(basic(secret)), "the old secret works inside the grace period");
  clock.advanceSeconds(61);
  assert.equal(await clients.authenticate(basic(secret)), undefined, "not after it");
  assert.ok(await clients.authenticate(basic(rotated.secret)));

  const again = await clients.rotateSecret(client.id, 0, admin);
  assert.equal(await clients.authenticate(basic(rotated.secret)), undefined, "grace 0: the old secret stops at once");
  assert.ok(again && (await clients.authenticate(basic(again.secret as string))));

  const spa = await clients.register(
    clientMetadata({
      client_name: "SPA",
      token_endpoint_auth_method: "none",
      redirect_uris: [
        "https://spa.example/cb",
        "https://spa.example/silent",
        "http://localhost:5173/cb",
        "com.example.app:/cb",
      ],
    }),
    admin,
  );
  assert.equal(spa.secret, undefined);
  assert.equal(spa.client.confidential, false);
  assert.equal(await clients.rotateSecret(spa.client.id, 0, admin), undefined);
  assert.deepEqual(await clients.authenticate({ method: "none", clientId: spa.client.id }), spa.client);
  assert.deepEqual([...(await clients.publicOrigins())], ["https://spa.example", "http://localhost:5173"]);

  assert.deepEqual(
    (await clients.list({ limit: 10 })).map((c) => c.name),
    ["Billing", "SPA"],
  );

  assert.equal(await clients.remove(client.id, admin), true);
  assert.equal(await clients.find(client.id), undefined);
  assert.equal(await clients.authenticate(basic(again?.secret as string)), undefined);
  assert.equal(await clients.remove(client.id, admin), false);
  assert.equal(await clients.remove("nonsense", admin), false);
  assert.equal(await clients.remove(spa.client.id, admin), true);
  assert.deepEqual([...(await clients.publicOrigins())], []);
});

test("registry: update replaces the metadata, and the cache sees it at once", async (t) => {
  const clock = new TestClock();
  const store = await openTestStore(t, clock.read);
  const clients = createClientRegistry(store, clock.read);
  const by = { userId: null, clientAddress: null };
  const { client } = await clients.register(clientMetadata(WEB), by);
  assert.equal((await clients.find(client.id))?.name, "Grafana");
  const updated = await clients.update(
    client.id,
    clientMetadata({ ...WEB, client_name: "Grafana 12", first_party: true }),
    by,
  );
  assert.equal(updated?.name, "Grafana 12");
  assert.equal(updated?.firstParty, true);
  assert.deepEqual(await clients.find(client.id), updated);
  assert.equal(await clients.update("0190a000-0000-7000-8000-000000000000", clientMetadata(WEB), by), undefined);
});

test("registry: a rotation or removal by another instance is seen within CACHE_TTL_MS; by this one at once", async (t) => {
  const clock = new TestClock();
  const store = await openTestStore(t, clock.read);
  // Two instances sharing one database: each has its own registry and cache.
  const here = createClientRegistry(store, clock.read);
  const there = createClientRegistry(store, clock.read);
  const by = { userId: null, clientAddress: null };
  const { client, secret } = await here.register(
    clientMetadata({ client_name: "Billing", grant_types: ["client_credentials"] }),
    by,
  );
  const basic = (s: string) => ({ method: "client_secret_basic" as const, clientId: client.id, secret: s });
  assert.deepEqual(await here.authenticate(basic(secret as string)), client);
  assert.deepEqual(await there.authenticate(basic(secret as string)), client);

  const rotated = await there.rotateSecret(client.id, 0, by);
  assert.equal(await there.authenticate(basic(secret as string)), undefined, "the rotating instance: at once");
  assert.deepEqual(
    [await here.authenticate(basic(secret as string)), await here.authenticate(basic(rotated?.secret as string))].map(
      (found) => found?.id,
    ),
    [client.id, undefined],
    "the other instance: its cached record until CACHE_TTL_MS",
  );
  clock.now += CACHE_TTL_MS;
  assert.equal(await here.authenticate(basic(secret as string)), undefined, "the other instance: after the bound");
  assert.equal((await here.authenticate(basic(rotated?.secret as string)))?.id, client.id);

  assert.equal(await there.remove(client.id, by), true);
  assert.equal(await there.find(client.id), undefined);
  assert.equal((await here.find(client.id))?.id, client.id, "still cached on the other instance");
  clock.now += CACHE_TTL_MS;
  assert.equal(await here.find(client.id), undefined);
  assert.equal(await here.authenticate(basic(rotated?.secret as string)), undefined);
});
