// The browser session of the authorization endpoint: a cookie naming one row
// of the service's sessions (auth/sessions.ts), so that ending that session
// by any route (sign-out, password change, deactivation, an admin) ends the
// cookie too: every use reads the row. The cookie holds the session id and an
// HMAC of it keyed from the signing material, never a token: it cannot be
// spent at the token endpoint, and a forged id is refused before any query.
// HttpOnly, SameSite=Lax (a cross-site POST carries no cookie: the consent
// form cannot be forged), Secure with the __Host- prefix under https.
import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { cookieValue } from "../platform/cookies.ts";
import type { SessionRecord, UserRecord, UserStore } from "../store/store.ts";

export interface BrowserSession {
  session: SessionRecord;
  user: UserRecord;
  /** When the user signed in (OIDC Core auth_time), in seconds. */
  authTime: number;
}

export interface BrowserSessions {
  readonly cookieName: string;
  /** The live session the request's cookie names, with its active user; undefined otherwise. */
  read(request: FastifyRequest): Promise<BrowserSession | undefined>;
  set(reply: FastifyReply, sessionId: string): void;
  clear(reply: FastifyReply): void;
  /** A value bound to the session, for the forms the session posts (consent, sign-out). */
  formToken(sessionId: string, purpose: string): string;
  checkFormToken(sessionId: string, purpose: string, token: string | undefined): boolean;
}

function sign(key: KeyObject, text: string): string {
  return createHmac("sha256", key).update(text).digest("base64url");
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function createBrowserSessions(options: {
  store: UserStore;
  /** The deployment's secret material; the first keys new cookies, every one is accepted. */
  signingMaterial: readonly string[];
  secure: boolean;
  clock: () => number;
}): BrowserSessions {
  const { store, secure, clock } = options;
  const keys = options.signingMaterial.map((material) =>
    // A KeyObject, made once: createHmac checks a Buffer key at about 20 us a call (issue 34).
    createSecretKey(createHmac("sha256", "uts browser session").update(material).digest()),
  );
  const [current] = keys;
  if (current === undefined) throw new Error("browser sessions need signing material");
  const cookieName = secure ? "__Host-uts_session" : "uts_session";
  const attributes = `Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`;

  return {
    cookieName,
    async read(request) {
      const value = cookieValue(request.headers.cookie, cookieName);
      const dot = value?.indexOf(".") ?? -1;
      if (value === undefined || dot < 0) return undefined;
      const id = value.slice(0, dot);
      const mac = value.slice(dot + 1);
      if (!keys.some((key) => equal(sign(key, `session:${id}`), mac))) return undefined;
      const session = await store.findSession(id);
      const now = new Date(clock()).toISOString();
      if (!session || session.revokedAt !== null || session.expiresAt <= now) return undefined;
      const user = await store.findById(session.userId);
      if (!user?.isActive) return undefined;
      return { session, user, authTime: Math.floor(Date.parse(session.createdAt) / 1000) };
    },
    set(reply, sessionId) {
      reply.header("set-cookie", `${cookieName}=${sessionId}.${sign(current, `session:${sessionId}`)}; ${attributes}`);
    },
    clear(reply) {
      reply.header("set-cookie", `${cookieName}=; ${attributes}; Max-Age=0`);
    },
    formToken: (sessionId, purpose) => sign(current, `form:${purpose}:${sessionId}`),
    checkFormToken: (sessionId, purpose, token) =>
      token !== undefined && keys.some((key) => equal(sign(key, `form:${purpose}:${sessionId}`), token)),
  };
}
