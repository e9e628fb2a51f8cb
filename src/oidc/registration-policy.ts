// What a dynamic registrant (RFC 7591, POST /auth/register) may ask for:
// less than an admin. Holding the initial access token proves that the
// operator let someone register a client, not which privileges that client
// should have, so the server decides (RFC 7591 sections 2 and 5 let it
// refuse or replace requested metadata): only the metadata a relying party
// describes itself with is read (first_party and any other admin-only field
// never are: an allow list, so a field added later stays the admins'); the
// grant types must be among DYNAMIC_CLIENT_GRANT_TYPES (by default the code
// flow and refresh, never client_credentials: a registrant minting service
// tokens for itself); the scope among DYNAMIC_CLIENT_SCOPES (by default the
// OpenID Connect ones). A request outside them is refused, naming what was
// refused, rather than quietly trimmed: the registrant learns at once what
// it will not get. Admin registrations (POST /clients, the CLI) are not
// limited by any of this.
import {
  type ClientMetadataInput,
  DEFAULT_USER_SCOPE,
  DEVICE_CODE_GRANT_TYPE,
  type GrantType,
  InvalidClientMetadata,
  scopeTokens,
} from "./clients.ts";

export const DEFAULT_DYNAMIC_GRANT_TYPES: readonly GrantType[] = ["authorization_code", "refresh_token"];
export const DEFAULT_DYNAMIC_SCOPES: readonly string[] = ["openid", "profile", "email", "offline_access"];
/** The client_name of a registration that names none: the consent page still shows something. */
export const UNNAMED_CLIENT = "Unnamed client";

export interface DynamicRegistrationPolicy {
  /** DYNAMIC_CLIENT_GRANT_TYPES. */
  grantTypes: readonly GrantType[];
  /** DYNAMIC_CLIENT_SCOPES. */
  scopes: readonly string[];
}

/** The metadata a registrant may set: how its client signs in, where it is reached, what it asks for. */
const REGISTRANT_FIELDS = [
  "client_name",
  "redirect_uris",
  "post_logout_redirect_uris",
  "grant_types",
  "response_types",
  "token_endpoint_auth_method",
  "scope",
  "backchannel_logout_uri",
  // Issue 36, PAR: a registrant may only make its own client stricter.
  "require_pushed_authorization_requests",
  // RFC 9449 section 5.2: a registrant may ask to be held to DPoP (issue 36).
  "dpop_bound_access_tokens",
  // Issue 37: its pages' colour, held to the same contrast check as an admin's (it only colours its own pages).
  "brand_color",
] as const satisfies readonly (keyof ClientMetadataInput)[];

const refused = (detail: string) => new InvalidClientMetadata("invalid_client_metadata", detail);
/** A registrant's own text in a refusal, bounded. */
const quoted = (value: string) => `'${value.slice(0, 64)}'`;

/**
 * The metadata to register for a dynamic registration, or InvalidClientMetadata: the registrant's own
 * fields only, never first-party, grant types and scope within the policy. An omitted scope is the
 * registry's default (`openid profile email` for a client that signs users in, none otherwise) as far
 * as the policy allows it; the rules that every client follows are clientMetadata()'s, after this.
 */
export function admitRegistration(
  body: Record<string, unknown>,
  policy: DynamicRegistrationPolicy,
): ClientMetadataInput {
  const input: Record<string, unknown> = {};
  for (const field of REGISTRANT_FIELDS) if (body[field] !== undefined) input[field] = body[field];
  const metadata = input as ClientMetadataInput;
  const grantTypes = metadata.grant_types ?? ["authorization_code"];
  const grantRefused = grantTypes.find((grant) => !(policy.grantTypes as readonly string[]).includes(grant));
  if (grantRefused !== undefined)
    throw refused(
      `grant_types: ${quoted(grantRefused)} is not available to dynamically registered clients ` +
        `(${policy.grantTypes.join(", ")})`,
    );
  const allowed = new Set(policy.scopes);
  let scope: string;
  if (metadata.scope === undefined) {
    const signsUsersIn = grantTypes.includes("authorization_code") || grantTypes.includes(DEVICE_CODE_GRANT_TYPE);
    const fallback = signsUsersIn ? DEFAULT_USER_SCOPE : "";
    scope = scopeTokens(fallback)
      .filter((token) => allowed.has(token))
      .join(" ");
  } else {
    const tokens = scopeTokens(metadata.scope);
    const scopeRefused = tokens.find((token) => !allowed.has(token));
    if (scopeRefused !== undefined)
      throw refused(
        `scope: ${quoted(scopeRefused)} is not available to dynamically registered clients (${policy.scopes.join(" ")})`,
      );
    scope = tokens.join(" ");
  }
  return { ...metadata, client_name: metadata.client_name ?? UNNAMED_CLIENT, scope, first_party: false };
}
