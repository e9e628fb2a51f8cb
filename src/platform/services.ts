// The services every capability shares, built once per app from its inputs:
// the keys and addresses, the token and password verbs, rate limits, the
// token check (guards), audit, sessions, second factors and passkeys, the
// OAuth client registry and its CORS, account mails with the mail outbox's
// sender (a worker: stopped when the app closes), security notices, known
// devices, account recovery, and the token endpoint's grant table. A
// capability takes what it needs from here (install.ts in its folder);
// what only one capability uses, it builds itself.
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { type AccountRecovery, createAccountRecovery } from "../auth/account-recovery.ts";
import { createDeviceCookie, createDevices, type DeviceCookie, type Devices } from "../auth/devices.ts";
import { createGuards, type Guards } from "../auth/guard.ts";
import { type KeySet, keySetFromPrivateKeys, keySetFromSecrets } from "../auth/keys.ts";
import { createPasskeys, type Passkeys, relyingPartyFor } from "../auth/passkeys.ts";
import { createPasswordPolicy, type PasswordPolicy } from "../auth/password-policy.ts";
import { createPasswordHasher, type PasswordHasher } from "../auth/passwords.ts";
import { type CounterStore, createRateLimits, MemoryCounterStore, type RateLimits } from "../auth/rate-limits.ts";
import { createSecondFactors, type SecondFactorService } from "../auth/second-factors.ts";
import { createSessions, type Sessions } from "../auth/sessions.ts";
import { type Clock, createTokenService, type TokenService } from "../auth/tokens.ts";
import { createUserLookup } from "../auth/user-cache.ts";
import { withVerifiedTokenCache } from "../auth/verified-tokens.ts";
import { type BrandBook, createBrandBook } from "../branding/brand-book.ts";
import { brandMail } from "../branding/mail-parts.ts";
import type { Config } from "../config.ts";
import type { GrantDeps } from "../core/grants/grant.ts";
import { createGrantRegistry, type GrantRegistry } from "../core/grants/registry.ts";
import { createDpop, type Dpop } from "../dpop/dpop.ts";
import { createNonces } from "../dpop/nonces.ts";
import { createProofVerifier } from "../dpop/proof.ts";
import { replayCacheFor } from "../dpop/replay.ts";
import { DEFAULT_DPOP_SETTINGS } from "../dpop/settings.ts";
import { type AccountMails, createAccountMails } from "../mail/messages.ts";
import { createNotices, type Notices } from "../mail/notices.ts";
import { createSealer } from "../mail/seal.ts";
import { createMailSender, type MailSender } from "../mail/sender.ts";
import { createMailTransport } from "../mail/transport.ts";
import { type ClientRegistry, createClientRegistry } from "../oidc/clients.ts";
import { type ClientCors, createClientCors } from "../oidc/cors.ts";
import type { Metrics } from "../operations/metrics.ts";
import type { Resolve } from "../outbound/guard.ts";
import type { UserStore } from "../store/store.ts";
import { type Addresses, createAddresses } from "./addresses.ts";
import { type Audit, createAudit } from "./audit.ts";

/** What the app is built from (buildApp's options, with their defaults filled in). */
export interface ServiceInputs {
  config: Config;
  store: UserStore;
  clock: Clock;
  /** Where rate-limit counters live; in this process unless given. */
  counters?: CounterStore | undefined;
  /** Prometheus metrics to record into; none are recorded (and no hook runs) without it. */
  metrics?: Metrics | undefined;
  /** Aborted when the process starts draining (SIGTERM). */
  draining?: AbortSignal | undefined;
  /** The DNS of the outbound guard (webhooks, back-channel logout). */
  resolve: Resolve;
}

export interface Services {
  config: Config;
  store: UserStore;
  clock: Clock;
  log: FastifyBaseLogger;
  metrics: Metrics | undefined;
  draining: AbortSignal | undefined;
  resolve: Resolve;
  /** Where rate-limit counters live (this process, or Redis); /readyz checks them. */
  counters: CounterStore;
  /**
   * The deployment's secret material: secrets under HS256, private keys under EdDSA and ES256 (one of
   * the two is empty). It keys the recovery codes made without MFA_ENCRYPTION_KEY, seals mailed links,
   * and signs device cookies and keys the known devices' hashes.
   */
  signingMaterial: string[];
  /** The keys of access tokens. */
  keys: KeySet;
  /**
   * The RSA keys of ID tokens: OpenID Connect is on when there are some (generated on SQLite;
   * OIDC_SIGNING_KEY_FILE on PostgreSQL, or it stays off).
   */
  oidcKeys: KeySet | undefined;
  addresses: Addresses;
  tokens: TokenService;
  passwords: PasswordHasher;
  policy: PasswordPolicy;
  limits: RateLimits;
  guards: Guards;
  audit: Audit;
  sessions: Sessions;
  factors: SecondFactorService;
  passkeys: Passkeys;
  clients: ClientRegistry;
  /** The brand (issue 37): the service's and each client's, read from the database at most every few seconds. */
  brands: BrandBook;
  /** The token and revocation endpoints (and discovery, JWKS, userinfo) answer browser apps of public clients. */
  clientCors: ClientCors;
  mails: AccountMails;
  mailSender: MailSender;
  notices: Notices;
  deviceCookie: DeviceCookie;
  devices: Devices;
  recovery: AccountRecovery;
  /**
   * DPoP proofs (RFC 9449): checked at the token endpoint and, for DPoP-bound tokens, by the token
   * check and userinfo; the replay cache in Redis when the counters are there.
   */
  dpop: Dpop;
  /** The token endpoint's grants: the core's, then each capability's as it installs. */
  grants: GrantRegistry;
  /** What every grant is built from. */
  grantDeps: GrantDeps;
}

export function createServices(
  app: FastifyInstance,
  { config, store, clock, counters, metrics, draining, resolve }: ServiceInputs,
): Services {
  const signingMaterial = [...config.signingSecrets, ...config.signingKeys];
  const deviceCookie = createDeviceCookie(signingMaterial, config.publicUrl?.startsWith("https:") === true);
  const keys =
    config.signingAlgorithm === "HS256"
      ? keySetFromSecrets(config.signingSecrets)
      : keySetFromPrivateKeys(config.signingAlgorithm, config.signingKeys);
  const addresses = createAddresses(app, config);
  const tokens = withVerifiedTokenCache(
    createTokenService({
      keys,
      issuer: addresses.issuer,
      audience: addresses.audience,
      expectedIssuer: addresses.expectedIssuer,
      expectedAudience: addresses.expectedAudience,
      clock,
      leewaySeconds: config.clockLeewaySeconds,
    }),
    { clock, leewaySeconds: config.clockLeewaySeconds },
  );
  const hasher = createPasswordHasher(config.argon2, { queueLimit: config.passwordHashQueueLimit, clock });
  const passwords = metrics ? metrics.instrumentHasher(hasher) : hasher;
  const counterStore = counters ?? new MemoryCounterStore(clock);
  const limits = createRateLimits(config.rateLimit, counterStore, clock);
  const audit = createAudit(store);
  const dpopSettings = config.dpop ?? DEFAULT_DPOP_SETTINGS;
  const dpop = createDpop({
    proofs: createProofVerifier({
      settings: dpopSettings,
      nonces: dpopSettings.nonces
        ? createNonces({ signingMaterial, windowSeconds: dpopSettings.nonceWindowSeconds, clock })
        : undefined,
      replays: replayCacheFor(counterStore, clock),
      clock,
    }),
    baseUrl: addresses.baseUrl,
    audit,
    ...(metrics ? { observe: (place: string, outcome: string) => metrics.observeDpopProof(place, outcome) } : {}),
  });
  const guards = createGuards(tokens, createUserLookup(store, config.userCache, clock), dpop);
  const sessions = createSessions(store, config.sessions, clock);
  const factors = createSecondFactors({
    store,
    keys: config.mfa.encryptionKeys,
    signingMaterial,
    issuer: config.mfa.totpIssuer,
    limits,
    clock,
  });
  const clients = createClientRegistry(
    store,
    clock,
    metrics ? (method, result) => metrics.observeClientAuthentication(method, result) : undefined,
    { settings: config.webhooks, resolve, reservedAudiences: () => [addresses.issuer(), addresses.audience()] },
  );
  const clientCors = createClientCors(clients, config.corsOrigins);
  const brands = createBrandBook({ store, clients, settings: config.branding, clock });
  const policy = createPasswordPolicy({ listCheck: config.passwordListCheck });
  const mails = createAccountMails(
    { from: config.mail.from, ...config.accountRecovery, defaultLocale: config.defaultLocale },
    createSealer(signingMaterial),
  );
  const mailSender = createMailSender({
    store,
    transport: createMailTransport(config.mail.transport),
    mails,
    settings: config.mail,
    clock,
    log: app.log,
    audit,
    ...(metrics ? { onDelivery: (kind, result) => metrics.observeMail(kind, result) } : {}),
    brand: async (mail) =>
      brandMail(mail, await brands.service(), {
        defaultFrom: config.settingsGiven?.MAIL_FROM === undefined,
        publicUrl: config.publicUrl,
      }),
  });
  app.addHook("onClose", async function stopMailSender() {
    await mailSender.stop();
  });
  const notices = createNotices({
    enabled: config.securityNotifications,
    message: mails.notice,
    emailChanged: mails.emailChanged,
    wake: mailSender.wake,
    clock,
  });
  const devices = createDevices({ signingMaterial, cookie: deviceCookie, notices, clock });
  const recovery = createAccountRecovery({
    store,
    passwords,
    policy,
    mails,
    sender: mailSender,
    notices,
    settings: config.accountRecovery,
    clock,
  });
  const passkeys = createPasskeys({
    store,
    audit,
    relyingParty: relyingPartyFor(config.publicUrl, addresses.baseUrl),
    clock,
    onRefusal: (reason) => app.log.debug({ reason }, "passkey assertion refused"),
    ...(metrics ? { onAssertion: (purpose, result) => metrics.observePasskey(purpose, result) } : {}),
  });
  const oidcKeys =
    config.oidcSigningKeys && config.oidcSigningKeys.length > 0
      ? keySetFromPrivateKeys("RS256", config.oidcSigningKeys)
      : undefined;
  const grantDeps: GrantDeps = {
    store,
    tokens,
    passwords,
    limits,
    sessions,
    audit,
    factors,
    verificationRequired: config.accountRecovery.verificationRequired,
    passkeys,
    clients,
    devices,
    notices,
  };
  return {
    config,
    store,
    clock,
    log: app.log,
    metrics,
    draining,
    resolve,
    counters: counterStore,
    signingMaterial,
    keys,
    oidcKeys,
    addresses,
    tokens,
    passwords,
    policy,
    limits,
    guards,
    audit,
    sessions,
    factors,
    passkeys,
    clients,
    clientCors,
    brands,
    mails,
    mailSender,
    notices,
    deviceCookie,
    devices,
    recovery,
    dpop,
    grants: createGrantRegistry(),
    grantDeps,
  };
}
