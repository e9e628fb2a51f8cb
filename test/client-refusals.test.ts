// A client that fails to authenticate at the token endpoint or at introspection is the client
// endpoints' hot refusal (issue 34): it is answered where it is found, without a trip through
// Fastify's error path (the rejected promise, the onError hooks, the error handler), and the
// answer stays what the error handlers gave: status, challenge, body. A root onError hook, added
// through Fastify's initialization channel before any route exists, sees every error that takes
// that path; these refusals must not reach it, while other errors still do.
import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { test } from "node:test";
import type { FastifyInstance } from "fastify";
import { clientMetadata, createClientRegistry } from "../src/oidc/clients.ts";
import { buildTestApp } from "./helpers.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;

/** A test app whose root onError hook counts the errors that take Fastify's error path. */
async function appCountingErrors(t: Parameters<typeof buildTestApp>[0]) {
  const errors: unknown[] = [];
  const onInit = (message: unknown) => {
    (message as { fastify: FastifyInstance }).fastify.addHook("onError", (_request, _reply, error, done) => {
      errors.push(error);
      done();
    });
  };
  subscribe("fastify.initialization", onInit);
  try {
    const built = await buildTestApp(t);
    return { ...built, errors };
  } finally {
    unsubscribe("fastify.initialization", onInit);
  }
}

test("a client's failed authentication is answered without Fastify's error path, the same answer", async (t) => {
  const { app, store, errors } = await appCountingErrors(t);
  const { client, secret } = await createClientRegistry(store).register(
    clientMetadata({ client_name: "Billing", grant_types: ["client_credentials"], scope: "invoices" }),
    { userId: null, clientAddress: null },
  );

  // The token endpoint: a wrong secret by HTTP Basic, and by the form (client_secret_post against a
  // client registered for Basic).
  const byBasic = await app.inject({
    method: "POST",
    url: "/auth/token",
    headers: { ...FORM, authorization: basic(client.id, "not-the-secret") },
    payload: "grant_type=client_credentials",
  });
  assert.equal(byBasic.statusCode, 401);
  assert.equal(byBasic.headers["www-authenticate"], 'Basic realm="clients"');
  assert.equal(byBasic.headers["content-type"], "application/json; charset=utf-8");
  assert.equal(
    byBasic.body,
    '{"detail":"Client authentication failed","error":"invalid_client","error_description":"Client authentication failed"}',
  );
  const byForm = await app.inject({
    method: "POST",
    url: "/auth/token",
    headers: FORM,
    payload: `grant_type=client_credentials&client_id=${client.id}&client_secret=${secret}`,
  });
  assert.equal(byForm.statusCode, 401);
  assert.equal(byForm.headers["www-authenticate"], "Bearer");
  assert.equal(byForm.json().error, "invalid_client");

  // Introspection: a wrong secret, a public client's id alone, no credentials at all.
  for (const [headers, payload] of [
    [{ ...FORM, authorization: basic(client.id, "not-the-secret") }, "token=x"],
    [FORM, `token=x&client_id=${client.id}&client_secret=not-the-secret`],
    [FORM, "token=x"],
  ] as const) {
    const refused = await app.inject({ method: "POST", url: "/auth/introspect", headers, payload });
    assert.equal(refused.statusCode, 401, payload);
    assert.equal(refused.headers["www-authenticate"], "Bearer");
    assert.equal(refused.headers["content-type"], "application/json; charset=utf-8");
    assert.equal(refused.headers["x-content-type-options"], "nosniff");
    assert.equal(refused.body, '{"detail":"Introspection needs a configured client\'s credentials or an admin token"}');
  }
  assert.deepEqual(errors, [], "no refusal above took Fastify's error path");

  // Other errors still do (the hook is live): a form without its token, from an authenticated client.
  const missing = await app.inject({
    method: "POST",
    url: "/auth/introspect",
    headers: { ...FORM, authorization: basic(client.id, secret as string) },
    payload: "",
  });
  assert.equal(missing.statusCode, 422);
  assert.equal(errors.length, 1);
});
