// The core: the spec's contract. The token endpoint (POST /auth/token, with
// its grant table, and POST /auth/revoke) and the caller's own record (/me,
// PUT /me/password). The grants added here are always on: the spec's
// password and refresh grants, the password grant's second-factor steps,
// a passkey alone, and client_credentials for registered clients. Other
// capabilities add theirs when they install (core/grants/registry.ts).
import type { FastifyInstance } from "fastify";
import { clientCredentialsGrant } from "../oidc/grants/client-credentials.ts";
import type { Services } from "../platform/services.ts";
import { mfaOtpGrant } from "./grants/mfa-otp.ts";
import { mfaRecoveryCodeGrant } from "./grants/mfa-recovery-code.ts";
import { mfaWebauthnGrant } from "./grants/mfa-webauthn.ts";
import { passwordGrant } from "./grants/password.ts";
import { refreshTokenGrant } from "./grants/refresh-token.ts";
import { webauthnGrant } from "./grants/webauthn.ts";
import { meRoutes } from "./me-routes.ts";
import { tokenRoutes } from "./token-routes.ts";

export async function installCore(
  api: FastifyInstance,
  {
    config,
    store,
    grants,
    grantDeps,
    clients,
    clientCors,
    tokens,
    sessions,
    guards,
    passwords,
    audit,
    policy,
    recovery,
    notices,
    dpop,
  }: Services,
): Promise<void> {
  grants.add(passwordGrant(grantDeps));
  grants.add(refreshTokenGrant(grantDeps));
  grants.add(mfaOtpGrant(grantDeps));
  grants.add(mfaRecoveryCodeGrant(grantDeps));
  grants.add(mfaWebauthnGrant(grantDeps));
  grants.add(webauthnGrant(grantDeps));
  grants.add(clientCredentialsGrant(grantDeps));
  await api.register(tokenRoutes, {
    grants,
    clients,
    cors: clientCors,
    store,
    tokens,
    sessions,
    oauthErrorFields: config.oauthErrorFields,
    dpop,
  });
  await api.register(meRoutes, { store, guards, passwords, audit, policy, recovery, notices });
}
