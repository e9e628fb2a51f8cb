// Builds the whole service from its inputs: buildApp({ config, store, clock })
// returns a ready Fastify instance and touches no process state, so tests
// build their own on an in-memory store and call inject(). Registration order
// is explicit: error handling and hardening, docs, then the API routes, which
// share one encapsulated context whose responses are never cached.
import { isUtf8 } from "node:buffer";
import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type ConnectionError, type FastifyInstance, type FastifyRequest, LogController } from "fastify";
import type { DestinationStream } from "pino";
import { createAccountRecovery } from "./auth/account-recovery.ts";
import { createDeviceCookie, createDevices } from "./auth/devices.ts";
import { createGuards } from "./auth/guard.ts";
import { type KeySet, keySetFromPrivateKeys, keySetFromSecrets } from "./auth/keys.ts";
import { createPasskeys, relyingPartyFor } from "./auth/passkeys.ts";
import { createPasswordPolicy } from "./auth/password-policy.ts";
import { createPasswordHasher } from "./auth/passwords.ts";
import { type CounterStore, createRateLimits, MemoryCounterStore } from "./auth/rate-limits.ts";
import { createSecondFactors } from "./auth/second-factors.ts";
import { clientOf, createSessions } from "./auth/sessions.ts";
import { type Clock, createTokenService } from "./auth/tokens.ts";
import { createUserLookup } from "./auth/user-cache.ts";
import { withVerifiedTokenCache } from "./auth/verified-tokens.ts";
import type { Config } from "./config.ts";
import { meRoutes } from "./core/me-routes.ts";
import { grantTable, type TokenRouteOptions, tokenRoutes } from "./core/token-routes.ts";
import { wellKnownRoutes } from "./discovery/well-known-routes.ts";
import { HttpError, MALFORMED_JSON, PasswordHashQueueFull, withoutStackTraces } from "./errors.ts";
import { passkeyRoutes } from "./factors/passkey-routes.ts";
import { secondFactorRoutes } from "./factors/second-factor-routes.ts";
import { createAccountMails } from "./mail/messages.ts";
import { createNotices } from "./mail/notices.ts";
import { createSealer } from "./mail/seal.ts";
import { createMailSender } from "./mail/sender.ts";
import { createMailTransport } from "./mail/transport.ts";
import { createBackchannelLogoutSender } from "./oidc/backchannel-logout.ts";
import { createBrowserSessions } from "./oidc/browser-session.ts";
import { clientRoutes } from "./oidc/client-routes.ts";
import { createClientRegistry } from "./oidc/clients.ts";
import { createOidcGrants } from "./oidc/code-grant.ts";
import { createClientCors } from "./oidc/cors.ts";
import { createIdTokens } from "./oidc/id-tokens.ts";
import { introspectRoutes } from "./oidc/introspection-routes.ts";
import { USERINFO_PATH } from "./oidc/paths.ts";
import { oidcRoutes } from "./oidc/provider-routes.ts";
import { createReauthentication } from "./oidc/reauthentication.ts";
import { registrationRoutes } from "./oidc/registration-routes.ts";
import { registerDocs } from "./operations/docs.ts";
import { healthRoutes } from "./operations/health-routes.ts";
import type { Metrics } from "./operations/metrics.ts";
import { observedAction, outcomeOfStatus } from "./operations/observed-actions.ts";
import { type Resolve, systemResolve } from "./outbound/guard.ts";
import { registerAccountPages } from "./pages/account-pages.ts";
import { registerSecurityPages } from "./pages/security-pages.ts";
import { accessLogHook, loggedUrl } from "./platform/access-log.ts";
import { createAddresses } from "./platform/addresses.ts";
import { createAudit } from "./platform/audit.ts";
import { documentCommonResponses, documentResponseHeaders } from "./platform/common-responses.ts";
import { handleError, handleNotFound } from "./platform/error-handler.ts";
import { isLingering, lingerAfterAnswer, lingerThenClose } from "./platform/lingering-close.ts";
import { requestLoggerOnFirstUse } from "./platform/request-logger.ts";
import { buildSerializersOnFirstUse } from "./platform/serialization.ts";
import { createValidatorCompiler } from "./platform/validation.ts";
import { accountRoutes } from "./recovery/routes.ts";
import type { UserStore } from "./store/store.ts";
import { bindingCookie } from "./upstream/binding.ts";
import { describeUpstreamFailure } from "./upstream/relying-party.ts";
import { callbackPath, upstreamRoutes } from "./upstream/routes.ts";
import { createUpstream } from "./upstream/sign-in.ts";
import { eventRoutes } from "./users/event-routes.ts";
import { userRoutes } from "./users/routes.ts";
import { createWebhookEndpoints } from "./webhooks/endpoints.ts";
import { webhookRoutes } from "./webhooks/routes.ts";
import { webhookSecretSealer } from "./webhooks/secrets.ts";
import { createWebhookSender } from "./webhooks/sender.ts";

/** Our largest legitimate body is a sign-up of about 600 bytes. */
export const BODY_LIMIT_BYTES = 16 * 1024;

/**
 * What logs must never show. Request logs carry method, path and client address only (see
 * serializeRequest), so these are a second guard. Plain paths, no wildcards: pino compiles them to
 * direct property checks, while wildcard paths walk every object on the hot path.
 */
export const REDACTED_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  "req.body",
  "body",
  "password",
  "current_password",
  "new_password",
  "access_token",
  "refresh_token",
  "token",
  "hashedPassword",
  "hashed_password",
  "mfa_token",
  "otp",
  "recovery_code",
  "recovery_codes",
  "webauthn_response",
  "secret",
];

/** A hop count becomes the function Fastify's types ask for; true, false and address lists pass as they are. */
function proxyTrust(setting: Config["trustProxy"]): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof setting === "number" ? (_address, hop) => hop < setting : setting;
}

/** An incoming X-Request-Id is kept only when it is short and plain, so it cannot forge log content. */
const SANE_REQUEST_ID = /^[\w.:-]{1,128}$/;

function requestId(request: { headers: Record<string, string | string[] | undefined> }): string {
  const incoming = request.headers["x-request-id"];
  return typeof incoming === "string" && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** The request as logged on other lines (errors, warnings): method, censored path, client address. */
function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return { method: request.method, url: loggedUrl(request.url), remoteAddress: request.ip };
}

/**
 * Every ten minutes, deletes expired sessions and refresh tokens, audit events past their retention,
 * old link tokens and sent mail, a thousand rows per statement, yielding between batches so that
 * requests are never held up behind a long delete.
 */
function housekeeping(app: FastifyInstance, store: UserStore, clock: Clock, retentionDays: number): void {
  const purge = async () => {
    try {
      const now = clock();
      // Authorization codes live 60 seconds; an hour later nobody can ask about one any more.
      const codeCutoff = new Date(now - 3_600_000).toISOString();
      const auditCutoff = new Date(now - retentionDays * 86_400_000).toISOString();
      // Link tokens are kept a week past their expiry (so a late click still hears "expired"), sent mail,
      // delivered webhook events and the webhook delivery log as long as audit events.
      const tokenCutoff = new Date(now - 7 * 86_400_000).toISOString();
      while (
        (await store.purgeExpired(new Date(now).toISOString(), 1000)) +
          (await store.pruneEvents(auditCutoff, 1000)) +
          (await store.pruneAccountRecords(tokenCutoff, auditCutoff, 1000)) +
          (await store.pruneWebhookRecords(auditCutoff, 1000)) +
          (await store.pruneBackchannelLogouts(auditCutoff, 1000)) +
          (await store.purgeAuthorizationCodes(codeCutoff, 1000)) +
          // Pending upstream sign-ins and their tickets live minutes; the same hour's margin.
          (await store.purgeUpstreamPending(codeCutoff, 1000)) >
        0
      ) {
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      app.log.warn({ err: error }, "housekeeping (expired sessions, old audit events) failed; will retry");
    }
  };
  const timer = setInterval(purge, 10 * 60_000);
  timer.unref();
  app.addHook("onClose", async function stopPurging() {
    clearInterval(timer);
  });
}

/**
 * Errors Node raises before a request reaches a route, answered in the service's error shape: a
 * request not received within HEADERS_TIMEOUT_MS or REQUEST_TIMEOUT_MS (408), headers over Node's
 * size limit (431), bytes that are not HTTP (400). The connection is closed after the answer, as
 * Node does; when a response has already started on it, it is only closed. After a 431 or a 400 the
 * client may still be sending (the rest of its headers, a body): the close lingers (lingering-close.ts),
 * so that it reads its answer. A 408 goes to a client that has stopped sending: closed at once.
 */
function clientErrorHandler(metrics: Metrics | undefined) {
  return function answerClientError(this: FastifyInstance, error: ConnectionError, socket: Socket): void {
    // A lingering connection has had its answer; the parser's complaints about what follows are moot.
    if (isLingering(socket)) {
      socket.destroy();
      return;
    }
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    const [status, detail] =
      error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "The request was not received in time"]
        : error.code === "HPE_HEADER_OVERFLOW"
          ? [431, "The request headers are too large"]
          : [400, "The request is not valid HTTP"];
    metrics?.observeConnectionError(status);
    if (status === 408) {
      this.log.info({ remoteAddress: socket.remoteAddress }, "request not received in time: 408, connection closed");
    }
    // Node's own handler checks this internal field too: writing a status line into a response that
    // has started would corrupt it.
    const started = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (socket.writable && !started) {
      const body = JSON.stringify({ detail });
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      if (status !== 408) {
        lingerThenClose(socket);
        return;
      }
    }
    socket.destroy(error);
  };
}

export interface AppOptions {
  config: Config;
  store: UserStore;
  clock?: Clock;
  /** Where rate-limit counters live; in this process unless given. */
  counters?: CounterStore;
  /** Prometheus metrics to record into; none are recorded (and no hook runs) without it. */
  metrics?: Metrics;
  /** Where log lines go (standard output unless given; tests capture them here). */
  logStream?: DestinationStream;
  /**
   * Aborted when the process starts draining (SIGTERM): from then on /readyz answers 503 and every
   * response carries `Connection: close`, so each keep-alive connection ends cleanly after its next
   * answer instead of being cut while a request may be on its way.
   */
  draining?: AbortSignal;
  /**
   * The DNS of the outbound guard (webhooks, back-channel logout): the system's resolver unless given.
   * Tests give one to make a host name resolve one way at registration and another at delivery.
   */
  resolve?: Resolve;
}

export async function buildApp({
  config,
  store,
  clock = Date.now,
  counters,
  logStream,
  metrics,
  draining,
  resolve = systemResolve,
}: AppOptions): Promise<FastifyInstance> {
  const { connections } = config;
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
      serializers: { req: serializeRequest },
      ...(logStream ? { stream: logStream } : {}),
    },
    // One access-log line per request (on response, see accessLog) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Every log line carries the request id: the caller's X-Request-Id when it is a sane token, a new UUID otherwise.
    requestIdHeader: false,
    genReqId: requestId,
    childLoggerFactory: requestLoggerOnFirstUse,
    bodyLimit: BODY_LIMIT_BYTES,
    schemaController: { compilersFactory: { buildSerializer: buildSerializersOnFirstUse } },
    trustProxy: proxyTrust(config.trustProxy),
    // Slow or stalled clients (see ConnectionConfig). Fastify's own default turns the request
    // timeout off, which let a client that stalls after its headers hold a socket for ever.
    http: {
      headersTimeout: connections.headersTimeoutMs,
      requestTimeout: connections.requestTimeoutMs,
      connectionsCheckingInterval: connections.checkIntervalMs,
      // A request without Content-Length or Transfer-Encoding has no body: Node skips the body stream's
      // events for it (every GET). commonHeaders drops the Content-Type of such a request, so that no
      // parser waits for a body that is not coming.
      optimizeEmptyRequests: true,
    },
    requestTimeout: connections.requestTimeoutMs,
    // Node counts a new connection's headers from the moment it opens, so a connection that sends
    // nothing at all is answered 408 after HEADERS_TIMEOUT_MS too; an idle keep-alive connection is
    // closed after KEEP_ALIVE_TIMEOUT_MS.
    keepAliveTimeout: connections.keepAliveTimeoutMs,
    clientErrorHandler: clientErrorHandler(metrics),
    // While closing, a request that arrives on an open connection is served (with Connection:
    // close), not refused with a 503 in Fastify's own error shape.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(createValidatorCompiler());
  app.decorateRequest("user", null);
  app.decorateRequest("sessionId", null);
  app.decorateRequest("loginStep", null);
  app.decorateRequest("actionOutcome", null);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);
  // JSON is the only body type outside the token endpoint; text/plain would otherwise parse.
  app.removeContentTypeParser("text/plain");
  // An empty JSON body (Content-Length: 0) is no body, as a request without one is (see commonHeaders):
  // the route answers both alike, instead of Fastify's 400 for an empty body. JSON is UTF-8 (RFC 8259
  // section 8.1): other bytes are malformed JSON, not text to repair with replacement characters.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, function utf8JsonOrNoBody(request, body, done) {
    const bytes = body as Buffer;
    if (bytes.length === 0) done(null, undefined);
    else if (!isUtf8(bytes)) done(new HttpError(400, MALFORMED_JSON), undefined);
    else {
      // Malformed JSON is the client's error, answered 400: its SyntaxError's stack is never read. The
      // parser answers at once; the request goes on only after, with stack traces back on.
      let parsed: [Error | null, unknown] = [null, undefined];
      withoutStackTraces(() =>
        parseJson(request, bytes.toString("utf8"), (error: Error | null, value?: unknown) => {
          parsed = [error, value];
        }),
      );
      done(...parsed);
    }
  });
  // One hook for the headers every answer carries. API answers may carry a token or a user's record, so
  // nothing is cached unless a route says otherwise (the key set and the metadata, the docs' assets).
  app.addHook("onRequest", function commonHeaders(request, reply, done) {
    reply
      .header("x-content-type-options", "nosniff")
      .header("x-request-id", request.id)
      .header("cache-control", "no-store");
    // RFC 9112 section 6.3: without Content-Length or Transfer-Encoding a request has no body. Node
    // (optimizeEmptyRequests) ends such a body without an event, and Fastify reads a body wherever a
    // Content-Type is sent: it would wait for ever. A type that describes no body is dropped, so the
    // route answers at once, as it answers a request without one.
    const headers = request.raw.headers;
    if (
      headers["content-type"] !== undefined &&
      headers["content-length"] === undefined &&
      headers["transfer-encoding"] === undefined
    )
      delete headers["content-type"];
    done();
  });
  // An answer sent before the request's body has arrived (413 over the limit, 415, a route that reads no
  // body) ends the connection, and the end lingers: closing at once would reset the connection under the
  // answer while the client is still sending, and the client would never read it (lingering-close.ts).
  // A request without Content-Length or Transfer-Encoding has no body, whatever `complete` says while
  // the parser is still finishing its headers; `complete` is undefined under inject(), which has no
  // connection.
  app.addHook("onSend", function lingerWhileStillSending(request, reply, payload, done) {
    const { headers, complete } = request.raw;
    if (
      complete === false &&
      (headers["transfer-encoding"] !== undefined || Number(headers["content-length"] ?? 0) > 0)
    ) {
      reply.header("connection", "close");
      lingerAfterAnswer(request.raw.socket);
    }
    done(null, payload);
  });
  if (draining) {
    // Decided when the answer is sent, not when the request arrives: a request already in flight when
    // the drain began must end its connection too, or its client may send the next request into a
    // connection that the close is about to sweep away.
    app.addHook("onSend", function closeWhileDraining(_request, reply, payload, done) {
      if (draining.aborted) reply.header("connection", "close");
      done(null, payload);
    });
  }
  const accessLog = accessLogHook(app);
  if (accessLog) app.addHook("onResponse", accessLog);
  // Off unless origins are configured: then only those origins, and no cookies (bearer tokens only).
  // A browser app needs every method the API uses, the two request headers it sends, and to read
  // the request id, the 401 challenge and the back-off hint.
  if (config.corsOrigins.length > 0) {
    await app.register((await import("@fastify/cors")).default, {
      origin: config.corsOrigins,
      credentials: false,
      methods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
      allowedHeaders: ["Authorization", "Content-Type", "X-Request-Id"],
      exposedHeaders: ["X-Request-Id", "WWW-Authenticate", "Retry-After"],
      maxAge: 600,
    });
  }

  // The deployment's secret material: secrets under HS256, private keys under EdDSA and ES256 (one of the
  // two is empty). It keys the recovery codes made without MFA_ENCRYPTION_KEY, seals mailed links, and
  // signs device cookies and keys the known devices' hashes.
  const signingMaterial = [...config.signingSecrets, ...config.signingKeys];
  const deviceCookie = createDeviceCookie(signingMaterial, config.publicUrl?.startsWith("https:") === true);

  await registerDocs(app);
  await registerAccountPages(app);
  await registerSecurityPages(app, deviceCookie);
  documentResponseHeaders(app);

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
  if (metrics) {
    // A refusal of the full hash queue is a 503 like a store's; the error itself tells them apart. Only
    // errors run this hook, and the set is only read for a 503.
    const refusedTurns = new WeakSet<FastifyRequest>();
    app.addHook("onError", function noteRefusedHashTurn(request, _reply, error, done) {
      if (error instanceof PasswordHashQueueFull) refusedTurns.add(request);
      done();
    });
    app.addHook("onResponse", function recordMetrics(request, reply, done) {
      const route = request.routeOptions.url ?? "(unmatched)";
      const status = reply.statusCode;
      metrics.observeRequest(
        request.method,
        route,
        status,
        reply.elapsedTime / 1000,
        request.loginStep,
        status === 503 && refusedTurns.has(request),
      );
      const observed = observedAction(route, request);
      if (observed !== undefined) metrics.observeAction(observed, request.actionOutcome ?? outcomeOfStatus(status));
      done();
    });
  }
  const counterStore = counters ?? new MemoryCounterStore(clock);
  const limits = createRateLimits(config.rateLimit, counterStore, clock);
  const guards = createGuards(tokens, createUserLookup(store, config.userCache, clock));
  const audit = createAudit(store);
  const sessions = createSessions(store, config.sessions, clock);
  const factors = createSecondFactors({
    store,
    keys: config.mfa.encryptionKeys,
    signingMaterial,
    issuer: config.mfa.totpIssuer,
    limits,
    clock,
  });
  housekeeping(app, store, clock, config.auditRetentionDays);
  const clients = createClientRegistry(
    store,
    clock,
    metrics ? (method, result) => metrics.observeClientAuthentication(method, result) : undefined,
    { settings: config.webhooks, resolve, reservedAudiences: () => [addresses.issuer(), addresses.audience()] },
  );
  // The token and revocation endpoints (and discovery, JWKS, userinfo) answer browser apps of public clients.
  const clientCors = createClientCors(clients, config.corsOrigins);
  const policy = createPasswordPolicy({ listCheck: config.passwordListCheck });
  const mails = createAccountMails(
    { from: config.mail.from, ...config.accountRecovery },
    createSealer(signingMaterial),
  );
  const sender = createMailSender({
    store,
    transport: createMailTransport(config.mail.transport),
    mails,
    settings: config.mail,
    clock,
    log: app.log,
    audit,
    ...(metrics ? { onDelivery: (kind, result) => metrics.observeMail(kind, result) } : {}),
  });
  app.addHook("onClose", async function stopMailSender() {
    await sender.stop();
  });
  const webhookSealer = webhookSecretSealer(config.mfa.encryptionKeys, signingMaterial);
  const webhookEndpoints = createWebhookEndpoints(store, webhookSealer, config.webhooks, clock, resolve);
  const webhookSender = createWebhookSender({
    store,
    sealer: webhookSealer,
    settings: config.webhooks,
    clock,
    log: app.log,
    resolve,
    ...(metrics ? { onDelivery: (type, result) => metrics.observeWebhook(type, result) } : {}),
  });
  app.addHook("onClose", async function stopWebhookSender() {
    await webhookSender.stop();
  });
  const notices = createNotices({
    enabled: config.securityNotifications,
    message: mails.notice,
    emailChanged: mails.emailChanged,
    wake: sender.wake,
    clock,
  });
  const devices = createDevices({ signingMaterial, cookie: deviceCookie, notices, clock });
  const recovery = createAccountRecovery({
    store,
    passwords,
    policy,
    mails,
    sender,
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

  // OpenID Connect, when there is an RSA key for ID tokens (generated on SQLite; OIDC_SIGNING_KEY_FILE on
  // PostgreSQL, or it stays off).
  const oidcKeys: KeySet | undefined =
    config.oidcSigningKeys && config.oidcSigningKeys.length > 0
      ? keySetFromPrivateKeys("RS256", config.oidcSigningKeys)
      : undefined;
  const idTokens = oidcKeys && createIdTokens(oidcKeys, addresses.issuer, clock);
  if (idTokens) {
    // The outbound settings and guard are the webhooks': both POST to addresses that admins (or a
    // dynamic registration) typed.
    const logoutSender = createBackchannelLogoutSender({
      store,
      idTokens,
      settings: config.webhooks,
      clock,
      log: app.log,
      resolve,
      ...(metrics ? { onDelivery: (result) => metrics.observeBackchannelLogout(result) } : {}),
    });
    app.addHook("onClose", async function stopBackchannelLogoutSender() {
      await logoutSender.stop();
    });
  }
  const userinfoUrl = () => `${addresses.baseUrl()}${USERINFO_PATH}`;
  const oidcGrants =
    idTokens &&
    createOidcGrants({
      store,
      sessions,
      tokens,
      idTokens,
      clients,
      audit,
      clock,
      clientInfo: clientOf,
      userinfoUrl,
    });

  // Sign-in with upstream providers (issue 25), when UPSTREAM_PROVIDERS names any.
  const upstreamConfig = config.upstream;
  const upstream =
    upstreamConfig && upstreamConfig.providers.length > 0
      ? {
          upstream: createUpstream({
            config: upstreamConfig,
            store,
            audit,
            sealKeys: config.mfa.encryptionKeys,
            signupOpen: config.signupOpen,
            limits,
            mails,
            wakeMail: sender.wake,
            verificationRequired: config.accountRecovery.verificationRequired,
            redirectUri: (provider) => `${addresses.baseUrl()}${callbackPath(provider)}`,
            clock,
            onFailure: (provider, error) =>
              app.log.warn({ provider, reason: describeUpstreamFailure(error) }, "upstream sign-in failed"),
          }),
          binding: bindingCookie(addresses.baseUrl().startsWith("https:")),
        }
      : undefined;

  const tokenOptions: TokenRouteOptions = {
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
    cors: clientCors,
    oauthErrorFields: config.oauthErrorFields,
    devices,
    notices,
    ...(oidcGrants ? { oidc: oidcGrants } : {}),
    ...(upstream ? { upstream } : {}),
  };
  await app.register(healthRoutes, { store, counters: counterStore, ...(draining ? { draining } : {}) });
  await app.register(wellKnownRoutes, {
    keys,
    addresses,
    cors: clientCors,
    grantTypes: [...grantTable(tokenOptions).keys()],
    registration: config.dynamicRegistration !== undefined,
    ...(oidcKeys ? { oidcKeys } : {}),
  });
  await app.register(async function apiRoutes(api) {
    documentCommonResponses(api);
    await api.register(tokenRoutes, tokenOptions);
    if (upstream) await api.register(upstreamRoutes, { store, guards, audit, ...upstream });
    if (idTokens) {
      const browserSessions = createBrowserSessions({
        store,
        signingMaterial,
        secure: addresses.baseUrl().startsWith("https:"),
        clock,
      });
      const reauthentication = createReauthentication({
        browserSessions,
        secure: addresses.baseUrl().startsWith("https:"),
        clock,
      });
      await api.register(oidcRoutes, {
        store,
        guards,
        tokens,
        sessions,
        clients,
        browserSessions,
        reauthentication,
        idTokens,
        audit,
        issuer: addresses.issuer,
        userinfoUrl,
        clock,
        cors: clientCors,
      });
    }
    await api.register(passkeyRoutes, { store, guards, passkeys, factors, notices });
    await api.register(meRoutes, { store, guards, passwords, sessions, audit, policy, recovery, notices });
    await api.register(userRoutes, {
      store,
      guards,
      passwords,
      limits,
      signupOpen: config.signupOpen,
      policy,
      recovery,
      notices,
    });
    await api.register(accountRoutes, { recovery, limits });
    await api.register(eventRoutes, { store, guards });
    await api.register(webhookRoutes, {
      store,
      guards,
      endpoints: webhookEndpoints,
      clock,
      wake: webhookSender.wake,
    });
    await api.register(secondFactorRoutes, { store, guards, passwords, limits, audit, factors, notices });
    await api.register(clientRoutes, { clients, guards });
    if (config.dynamicRegistration)
      await api.register(registrationRoutes, {
        clients,
        initialAccessToken: config.dynamicRegistration.initialAccessToken,
        policy: config.dynamicRegistration,
      });
    await api.register(introspectRoutes, {
      store,
      guards,
      tokens,
      clients: config.introspectionClients,
      registry: clients,
      clock,
    });
  });

  await app.ready();
  return app;
}
