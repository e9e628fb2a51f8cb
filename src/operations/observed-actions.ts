// Which requests are OAuth and OpenID Connect actions for the metrics, and
// how each ended. A route names its action in its config (`observed`), the
// token endpoint's grants by grant_type; a handler that knows more than its
// status says (code, consent_page, replayed, active) sets actionOutcome.
// Apart from metrics.ts so that naming them does not load prom-client.
import type { FastifyRequest } from "fastify";

/**
 * The OAuth and OpenID Connect actions counted by outcome, one counter each. A route names its action
 * in its config (`observed`); the token endpoint's by grant_type. Never labelled by client.
 */
export type ObservedAction =
  | "authorization"
  | "code_exchange"
  | "client_credentials"
  | "introspection"
  | "userinfo"
  | "consent"
  | "logout"
  // Issue 36, PAR.
  | "pushed_authorization_request"
  // The device authorization grant (issue 36): its endpoint, its polls, its page.
  | "device_authorization"
  | "device_code"
  | "device_verification";

declare module "fastify" {
  interface FastifyRequest {
    /** How the route's observed action ended, when the status alone does not say. */
    actionOutcome: string | null;
  }
  interface FastifyContextConfig {
    /** The action this route's requests count as. */
    observed?: ObservedAction;
  }
}

/** The token endpoint's grants that count as actions (the spec's logins have logins_total). */
const GRANT_ACTIONS: Readonly<Record<string, ObservedAction>> = {
  authorization_code: "code_exchange",
  client_credentials: "client_credentials",
  "urn:ietf:params:oauth:grant-type:device_code": "device_code",
};

/** The action of a request: its route's, or at the token endpoint its grant's. */
export function observedAction(route: string, request: FastifyRequest): ObservedAction | undefined {
  const named = request.routeOptions.config?.observed;
  if (named !== undefined || route !== "/auth/token") return named;
  const grantType = (request.body as { grant_type?: unknown } | undefined)?.grant_type;
  return typeof grantType === "string" ? GRANT_ACTIONS[grantType] : undefined;
}

/** The outcome of an action whose handler set none: what its status says. */
export function outcomeOfStatus(status: number): string {
  if (status < 400) return "success";
  if (status === 401) return "unauthorized";
  if (status === 403) return "forbidden";
  if (status === 429) return "rate_limited";
  if (status >= 500) return "unavailable";
  return "invalid_request";
}
