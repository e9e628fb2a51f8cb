// The device grant's test fixture (issue 36): the OpenID Connect set-up of
// test/oidc/client-flow.ts (a user signed in with a browser session) plus
// clients registered for the device grant (a public TV app, a confidential
// CLI), and the steps a device and a person take, over inject(): the device
// authorization request, a poll of the token endpoint, and the /device
// page's forms (enter the code, approve or deny).
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import type { FastifyInstance } from "fastify";
import type { Config } from "../../src/config.ts";
import { clientMetadata, createClientRegistry, DEVICE_CODE_GRANT_TYPE } from "../../src/oidc/clients.ts";
import type { Metrics } from "../../src/operations/metrics.ts";
import type { UserStore } from "../../src/store/store.ts";
import { setUp } from "../oidc/client-flow.ts";

export const DEVICE_GRANT = DEVICE_CODE_GRANT_TYPE;

export interface DeviceClients {
  /** A public client (a TV app): client_id alone. */
  tv: { id: string };
  /** A confidential client (a CLI with a secret): HTTP Basic. */
  cli: { id: string; secret: string };
}

export async function registerDeviceClients(store: UserStore): Promise<DeviceClients> {
  const registry = createClientRegistry(store);
  const by = { userId: null, clientAddress: null };
  const tv = await registry.register(
    clientMetadata({
      client_name: "Living-room <TV>",
      grant_types: [DEVICE_GRANT, "refresh_token"],
      token_endpoint_auth_method: "none",
      scope: "openid profile email offline_access",
    }),
    by,
  );
  const cli = await registry.register(
    clientMetadata({
      client_name: "Deploy CLI",
      grant_types: [DEVICE_GRANT],
      token_endpoint_auth_method: "client_secret_basic",
      scope: "openid email",
      first_party: true,
    }),
    by,
  );
  return { tv: { id: tv.client.id }, cli: { id: cli.client.id, secret: cli.secret as string } };
}

export async function setUpDevice(t: TestContext, config: Partial<Config> = {}, extra: { metrics?: Metrics } = {}) {
  const setup = await setUp(t, config, extra);
  const devices = await registerDeviceClients(setup.store);
  return { ...setup, devices };
}
export type DeviceSetup = Awaited<ReturnType<typeof setUpDevice>>;

export const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`,
});

export function form(fields: Record<string, string>): {
  headers: Record<string, string>;
  payload: string;
} {
  return {
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams(fields).toString(),
  };
}

export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** POST /oauth/device_authorization for a public client; the whole answer. */
export async function startDevice(app: FastifyInstance, clientId: string, scope?: string) {
  const body = form({ client_id: clientId, ...(scope === undefined ? {} : { scope }) });
  return app.inject({ method: "POST", url: "/oauth/device_authorization", ...body });
}

export async function authorizeDevice(app: FastifyInstance, clientId: string, scope?: string) {
  const answer = await startDevice(app, clientId, scope);
  assert.equal(answer.statusCode, 200, answer.body);
  return answer.json() as DeviceAuthorization;
}

/** One poll of the token endpoint (a public client by client_id, or headers for another). */
export async function poll(
  app: FastifyInstance,
  deviceCode: string,
  client: { id: string } | { headers: Record<string, string> },
) {
  const fields: Record<string, string> = { grant_type: DEVICE_GRANT, device_code: deviceCode };
  const headers = "id" in client ? {} : client.headers;
  if ("id" in client) fields.client_id = client.id;
  const body = form(fields);
  return app.inject({
    method: "POST",
    url: "/auth/token",
    headers: { ...body.headers, ...headers },
    payload: body.payload,
  });
}

const FORM_TOKEN = /name="form_token" value="([^"]+)"/;

export function formToken(html: string): string {
  const match = FORM_TOKEN.exec(html);
  assert.ok(match, `no form token in ${html.slice(0, 300)}`);
  return (match[1] as string).replaceAll("&#61;", "=");
}

/** The entry form's token for this browser session (GET /device). */
export async function entryFormToken(app: FastifyInstance, cookie: string): Promise<string> {
  const page = await app.inject({ url: "/device", headers: { cookie } });
  assert.equal(page.statusCode, 200, page.body);
  return formToken(page.body);
}

/** POST /device with a typed code: the confirmation page, or the entry form again with its problem. */
export async function enterCode(app: FastifyInstance, cookie: string, typed: string, remoteAddress?: string) {
  const token = await entryFormToken(app, cookie);
  const body = form({ user_code: typed, form_token: token });
  return app.inject({
    method: "POST",
    url: "/device",
    headers: { ...body.headers, cookie },
    payload: body.payload,
    ...(remoteAddress ? { remoteAddress } : {}),
  });
}

/** Enters the code and answers the confirmation page: approve or deny. */
export async function decide(app: FastifyInstance, cookie: string, typed: string, decision: "approve" | "deny") {
  const confirm = await enterCode(app, cookie, typed);
  assert.equal(confirm.statusCode, 200, confirm.body);
  const code = /name="user_code" value="([^"]+)"/.exec(confirm.body)?.[1] as string;
  const body = form({ user_code: code, form_token: formToken(confirm.body), decision });
  return app.inject({
    method: "POST",
    url: "/device/decision",
    headers: { ...body.headers, cookie },
    payload: body.payload,
  });
}
