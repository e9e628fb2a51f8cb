// Pushed authorization requests (issue 36) in the in-process tests: a push
// by each test client as it registered (test/oidc/client-flow.ts), the
// browser's request with client_id and request_uri, and the audit events
// the service writes (caught as the store is asked to record them: events
// about no user are not listed by user).
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import type { AuditEvent, UserStore } from "../../src/store/store.ts";
import { type ClientKey, credentials, REDIRECTS, type Setup } from "./client-flow.ts";
import { pkcePair } from "./fixture.ts";

export const FORM = { "content-type": "application/x-www-form-urlencoded" };
export const REQUEST_URI = /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/;

/** The authorization request's parameters for a client, with a fresh PKCE pair. */
export function requestFields(setup: Setup, key: ClientKey, extra: Record<string, string> = {}) {
  const pkce = pkcePair();
  const fields: Record<string, string> = {
    response_type: "code",
    client_id: setup.clients[key].id,
    redirect_uri: REDIRECTS[key],
    scope: "openid email",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    state: "pushed-state",
    nonce: "pushed-nonce",
    ...extra,
  };
  return { fields, verifier: pkce.verifier };
}

/** POST /oauth/par as the client registered (Basic, post, or a public client's id). */
export function push(app: FastifyInstance, setup: Setup, key: ClientKey, fields: Record<string, string>) {
  const { headers, fields: auth } = credentials(setup, key);
  // Basic clients may leave client_id out of the form; the tests' partner sends it, as openid-client does.
  return app.inject({
    method: "POST",
    url: "/oauth/par",
    headers: { ...headers, ...FORM },
    payload: new URLSearchParams({ ...fields, ...auth }).toString(),
  });
}

/** Pushes and answers the request_uri, checking the whole 201 answer. */
export async function pushed(app: FastifyInstance, setup: Setup, key: ClientKey, fields: Record<string, string>) {
  const answer = await push(app, setup, key, fields);
  assert.equal(answer.statusCode, 201, answer.body);
  assert.equal(answer.headers["cache-control"], "no-store");
  assert.match(answer.headers["content-type"] as string, /^application\/json/);
  const body = answer.json();
  assert.deepEqual(Object.keys(body).sort(), ["expires_in", "request_uri"]);
  assert.match(body.request_uri, REQUEST_URI);
  assert.equal(body.expires_in, 60);
  return body.request_uri as string;
}

export function authorizeWith(clientId: string, requestUri: string, extra: Record<string, string> = {}) {
  return `/oauth/authorize?${new URLSearchParams({ ...extra, client_id: clientId, request_uri: requestUri })}`;
}

/** The events the store's recordEvent writes from now on (also those about no user); not those a write records in its own transaction. */
export function recordedEvents(store: UserStore): Omit<AuditEvent, "id" | "createdAt">[] {
  const events: Omit<AuditEvent, "id" | "createdAt">[] = [];
  const record = store.recordEvent.bind(store);
  store.recordEvent = async (event) => {
    events.push(event);
    return record(event);
  };
  return events;
}

/** The store's oidc audit events, oldest first (also those about no user): [outcome, user id]. */
export async function oidcEvents(store: UserStore): Promise<[string, string | null][]> {
  const events = await store.listServiceEvents({ limit: 100, type: "oidc" });
  return events.reverse().map((event) => [event.outcome, event.userId]);
}
