// Where a client's logout tokens may go (its backchannel_logout_uri): the
// outbound guard's rules (outbound/guard.ts, the webhooks' guard), applied
// when the URI is registered or changed (clients.ts, for every way in) and
// at every delivery (backchannel-logout.ts). https, to a public address;
// plain http only to a loopback address, and addresses that are not public
// at all, only for a client an admin registered while
// WEBHOOK_REFUSE_PRIVATE_ADDRESSES is off (a receiver on a developer's
// machine). A dynamically registered client never reaches a private address
// or plain http, whatever the setting: its registrant is not trusted with
// the service's network position. Logout tokens are bearer proofs of a
// session's end, so they never cross a network in clear.
import { checkDestination, type OutboundRules, type Resolve, systemResolve } from "../outbound/guard.ts";
import type { ClientRecord } from "../store/store.ts";
import type { WebhookConfig } from "../webhooks/settings.ts";

/** WEBHOOK_REFUSE_PRIVATE_ADDRESSES: the one setting of outbound deliveries that decides where logout tokens may go. */
export type BackchannelSettings = Pick<WebhookConfig, "refusePrivateAddresses">;

export function backchannelRules(
  settings: BackchannelSettings,
  registeredBy: ClientRecord["registeredBy"],
): OutboundRules {
  const dynamic = registeredBy === "dynamic";
  return {
    privateAllowed: !settings.refusePrivateAddresses && !dynamic,
    httpOnlyToLoopback: true,
    privateRefusedBy: dynamic ? "a dynamically registered client" : "WEBHOOK_REFUSE_PRIVATE_ADDRESSES",
  };
}

export const BACKCHANNEL_WITH_CREDENTIALS = "backchannel_logout_uri: must not carry a user name or password";
export const BACKCHANNEL_NOT_HTTPS =
  "backchannel_logout_uri: must be https (plain http only to a loopback host, and only with " +
  "WEBHOOK_REFUSE_PRIVATE_ADDRESSES off)";
export const BACKCHANNEL_PRIVATE =
  "backchannel_logout_uri: the host has no public address (WEBHOOK_REFUSE_PRIVATE_ADDRESSES is on)";
export const BACKCHANNEL_UNRESOLVABLE = "backchannel_logout_uri: the host name does not resolve";
/** A registrant's refusals name no setting, and do not tell a name that does not resolve from a private one. */
export const DYNAMIC_BACKCHANNEL_NOT_HTTPS = "backchannel_logout_uri: must be https";
export const DYNAMIC_BACKCHANNEL_PRIVATE = "backchannel_logout_uri: the host has no public address";

/**
 * Why `uri` (already an absolute http(s) URI, clients.ts) may not be the backchannel_logout_uri of a
 * client registered `registeredBy`, in words for whoever registers it; undefined when it may.
 */
export async function backchannelUriProblem(
  uri: string,
  settings: BackchannelSettings,
  registeredBy: ClientRecord["registeredBy"],
  resolve: Resolve = systemResolve,
): Promise<string | undefined> {
  const refusal = await checkDestination(new URL(uri), backchannelRules(settings, registeredBy), resolve);
  if (refusal === undefined) return undefined;
  if (refusal === "credentials") return BACKCHANNEL_WITH_CREDENTIALS;
  if (registeredBy === "dynamic")
    return refusal === "plain_http" ? DYNAMIC_BACKCHANNEL_NOT_HTTPS : DYNAMIC_BACKCHANNEL_PRIVATE;
  if (refusal === "plain_http") return BACKCHANNEL_NOT_HTTPS;
  return refusal === "unresolvable" ? BACKCHANNEL_UNRESOLVABLE : BACKCHANNEL_PRIVATE;
}
