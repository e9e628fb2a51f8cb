// Upstream sign-in (issue 25), when UPSTREAM_PROVIDERS names any: sign-in
// with Google, Microsoft, GitHub or any OpenID Connect provider. The redirect
// to the provider and its callback, the providers the sign-in page draws
// its buttons from, the identities linked to an account, and the token
// endpoint's grant that spends the callback's ticket.
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { upstreamAdminRoutes } from "./admin-routes.ts";
import { bindingCookie } from "./binding.ts";
import { upstreamGrant } from "./grant.ts";
import { describeUpstreamFailure } from "./relying-party.ts";
import { callbackPath, upstreamRoutes } from "./routes.ts";
import { createUpstream } from "./sign-in.ts";

export async function installUpstream(
  api: FastifyInstance,
  { config, store, clock, log, audit, guards, limits, mails, mailSender, addresses, grants, grantDeps }: Services,
): Promise<void> {
  const upstreamConfig = config.upstream;
  if (!upstreamConfig || upstreamConfig.providers.length === 0) return;
  const upstream = {
    upstream: createUpstream({
      config: upstreamConfig,
      store,
      audit,
      sealKeys: config.mfa.encryptionKeys,
      signupOpen: config.signupOpen,
      limits,
      mails,
      wakeMail: mailSender.wake,
      verificationRequired: config.accountRecovery.verificationRequired,
      redirectUri: (provider) => `${addresses.baseUrl()}${callbackPath(provider)}`,
      clock,
      onFailure: (provider, error) =>
        log.warn({ provider, reason: describeUpstreamFailure(error) }, "upstream sign-in failed"),
    }),
    binding: bindingCookie(addresses.baseUrl().startsWith("https:")),
  };
  grants.add(upstreamGrant({ ...grantDeps, upstream }));
  await api.register(upstreamRoutes, { store, guards, audit, ...upstream });
  await api.register(upstreamAdminRoutes, { store, guards, upstream: upstream.upstream });
}
