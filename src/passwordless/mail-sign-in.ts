// Sign-in by mail without a password (issue 37): the attempt a page asks for
// and its redemption by the token endpoint's two grants (grants.ts).
//
// Asking (POST /auth/mail-sign-in) answers at once with an opaque attempt id
// and sets a cookie binding the attempt to the asking browser; the lookup of
// the address, the attempt's row and its mail are written after the answer
// has gone, so known and unknown addresses answer alike, in status, body and
// time (as the password reset does). A mail goes to an active account, or,
// while sign-up is open, to an address no account has; otherwise the row is
// written all the same and no mail goes out.
//
// Redeeming: the attempt must be live (unused, unexpired, fewer than five
// tries); each code or token compared takes a try first (five wrong ones end
// it, however many arrive at once), and a wrong one also counts against the
// login limits of the address and the client address; the right one gives
// its try back and spends the attempt in one conditional UPDATE (a second use finds it spent). The
// link opens only in the browser holding the attempt's cookie, unless the
// person confirmed that they asked for it. Then the mail has proved the
// address: on an account whose address was never verified, every way in set
// before (a password, passkeys, second factors, sessions) ends, as a mailed
// link's proof does (auth/address-proof.ts, store.proveAddress); an unknown
// address becomes an account (verified, no password) only while sign-up is
// open. Every refusal is the same invalid_grant.
import {
  createHash,
  createHmac,
  createSecretKey,
  hkdfSync,
  randomBytes,
  randomInt,
  timingSafeEqual,
} from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { endedEvents, mailedLinkPlan } from "../auth/address-proof.ts";
import type { RateLimits } from "../auth/rate-limits.ts";
import { EmailTaken } from "../errors.ts";
import type { Locale } from "../i18n/locales.ts";
import type { AccountMails } from "../mail/messages.ts";
import { OAuthError } from "../oauth-errors.ts";
import type { Audit } from "../platform/audit.ts";
import { cookieValue } from "../platform/cookies.ts";
import type { MailSignInRecord, UserRecord, UserStore } from "../store/store.ts";
import { normalizeEmail } from "../users/email.ts";
import type { PasswordlessMail } from "./settings.ts";

/** How long a sign-in mail's link and code work. */
export const MAIL_SIGN_IN_SECONDS = 900;
/** Wrong codes (or tokens) that end an attempt. */
export const MAX_WRONG_CODES = 5;
export const INVALID_MAIL_SIGN_IN = "The sign-in code or link is wrong, expired or already used: ask for a new e-mail";
export const CONFIRMATION_REQUIRED =
  "This link was asked for in another browser: confirm that you asked for it, then send it again with confirm=true";
export const FIRST_PARTY_ONLY = "Sign-in by mail is for the service's own apps only";

export type Delivery = "link" | "code";

export interface MailSignInAnswer {
  attempt: string;
  expires_in: number;
  delivery: Delivery[];
}

export interface MailSignInOptions {
  mode: Exclude<PasswordlessMail, "off">;
  store: UserStore;
  mails: AccountMails;
  wakeMail: () => void;
  limits: RateLimits;
  audit: Audit;
  signupOpen: boolean;
  /** The deployment's secret material: keys the codes' HMAC, so the database alone cannot try codes. */
  signingMaterial: readonly string[];
  /** Secure cookie (with the __Host- prefix) when the service is reached over https. */
  secureCookie: boolean;
  clock: () => number;
}

/** Where the account of a redeemed attempt stands: signed in, or a refusal the grant answers. */
export type Redeemed = { user: UserRecord; created: boolean };

const sha256 = (value: string) => createHash("sha256").update(value).digest("base64url");

function sameHash(a: string, b: string): boolean {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length === y.length && timingSafeEqual(x, y);
}

export const invalidMailSignIn = () => new OAuthError(400, "invalid_grant", INVALID_MAIL_SIGN_IN);

export function createMailSignIn(options: MailSignInOptions) {
  const { store, mails, limits, audit, clock } = options;
  const delivery: Delivery[] = options.mode === "both" ? ["link", "code"] : [options.mode];
  const codeKey = createSecretKey(
    Buffer.from(hkdfSync("sha256", options.signingMaterial[0] ?? "", "user-token-service", "mail-sign-in-code", 32)),
  );
  const codeHash = (attempt: string, code: string) =>
    createHmac("sha256", codeKey).update(`${attempt}:${code}`).digest("base64url");
  const iso = (offsetSeconds = 0) => new Date(clock() + offsetSeconds * 1000).toISOString();
  const cookieName = options.secureCookie ? "__Host-uts_mail_sign_in" : "uts_mail_sign_in";
  const cookieAttributes = `Path=/; HttpOnly; SameSite=Lax; Max-Age=${MAIL_SIGN_IN_SECONDS}${options.secureCookie ? "; Secure" : ""}`;

  /** After the answer: the attempt's row, and its mail when the address may sign in by mail. */
  async function write(attempt: string, binding: string, email: string, locale: Locale, ip: string): Promise<void> {
    const user = await store.findByEmail(email);
    const token = randomBytes(32).toString("base64url");
    const code = String(randomInt(0, 1_000_000)).padStart(6, "0");
    const mailed = user ? user.isActive : options.signupOpen;
    const mail = mailed
      ? mails.mailSignIn(email, user?.id ?? null, {
          attempt,
          ...(delivery.includes("link") ? { token } : {}),
          ...(delivery.includes("code") ? { code } : {}),
          locale,
          ttlSeconds: MAIL_SIGN_IN_SECONDS,
        })
      : undefined;
    await store.createMailSignIn(
      {
        id: attempt,
        email,
        bindingHash: sha256(binding),
        // A part not offered is stored as the hash of a value no one knows.
        tokenHash: sha256(delivery.includes("link") ? token : randomBytes(32).toString("base64url")),
        codeHash: codeHash(attempt, delivery.includes("code") ? code : randomBytes(16).toString("hex")),
        expiresAt: iso(MAIL_SIGN_IN_SECONDS),
      },
      mail,
    );
    if (mail) options.wakeMail();
    await audit.record("login", user?.id ?? null, mailed ? "mail_sign_in_requested" : "mail_sign_in_not_mailed", ip);
  }

  /** A wrong code or token: its try stays counted; a failed login of the address; always invalid_grant. */
  async function wrong(attempt: MailSignInRecord, ip: string): Promise<never> {
    await limits.recordLoginFailure(attempt.email, ip);
    await audit.record("login", null, "mail_sign_in_failure", ip);
    throw invalidMailSignIn();
  }

  /**
   * The attempt a grant names, live, with the login limits checked and one of its five tries taken
   * (before any comparison, so parallel guesses cannot outrun the count); invalid_grant otherwise.
   */
  async function tryAttempt(id: string, ip: string): Promise<MailSignInRecord> {
    const found = await store.findMailSignIn(id);
    if (!found) throw invalidMailSignIn();
    await limits.checkLogin(found.email, ip);
    const attempt = await store.tryMailSignIn(id, iso(), MAX_WRONG_CODES);
    if (!attempt) throw invalidMailSignIn();
    return attempt;
  }

  /** Spends the attempt; the mail proved its address: the account, proven, or a new one while sign-up is open. */
  async function spend(attempt: MailSignInRecord, ip: string): Promise<Redeemed> {
    const spent = await store.useMailSignIn(attempt.id, iso());
    if (!spent) throw invalidMailSignIn();
    await limits.recordLoginSuccess(spent.email, ip);
    const account = await store.findByEmail(spent.email);
    if (account) {
      const proof = await store.proveAddress(account.id, (now) => mailedLinkPlan(now, spent.email), {
        events: (ended) => endedEvents("login", ended, ip),
      });
      if (proof.outcome !== "proven") {
        await audit.record("login", account.id, "refused_inactive", ip);
        throw invalidMailSignIn();
      }
      return { user: proof.user, created: false };
    }
    if (!options.signupOpen) {
      await audit.record("login", null, "mail_sign_in_signup_closed", ip);
      throw invalidMailSignIn();
    }
    try {
      const user = await store.create(
        { email: spent.email, hashedPassword: "", emailVerifiedAt: iso() },
        { events: [{ type: "signup", outcome: "mail_sign_in", clientAddress: ip }] },
      );
      return { user, created: true };
    } catch (error) {
      // Signed up by another way at the same moment: that account is not this mail's to open.
      if (error instanceof EmailTaken) throw invalidMailSignIn();
      throw error;
    }
  }

  return {
    delivery,

    /** Starts an attempt: the answer and the cookie now, the row and the mail after the answer. */
    start(
      reply: FastifyReply,
      request: { email: string; locale: Locale; ip: string; cookies: string | undefined },
      later: (work: () => Promise<void>) => void,
    ) {
      const attempt = randomBytes(16).toString("base64url");
      // A browser that asked before keeps its binding, so the link of an earlier mail still opens there.
      const held = cookieValue(request.cookies, cookieName);
      const binding = held !== undefined && /^[\w-]{43}$/.test(held) ? held : randomBytes(32).toString("base64url");
      reply.header("set-cookie", `${cookieName}=${binding}; ${cookieAttributes}`);
      const address = normalizeEmail(request.email);
      later(() => write(attempt, binding, address, request.locale, request.ip));
      return { attempt, expires_in: MAIL_SIGN_IN_SECONDS, delivery } satisfies MailSignInAnswer;
    },

    async redeemCode(id: string, code: string, ip: string): Promise<Redeemed> {
      const attempt = await tryAttempt(id, ip);
      if (!/^\d{6}$/.test(code) || !sameHash(codeHash(attempt.id, code), attempt.codeHash)) return wrong(attempt, ip);
      return spend(attempt, ip);
    },

    async redeemLink(id: string, token: string, confirmed: boolean, request: FastifyRequest): Promise<Redeemed> {
      const ip = request.ip;
      const attempt = await tryAttempt(id, ip);
      if (!sameHash(sha256(token), attempt.tokenHash)) return wrong(attempt, ip);
      const binding = cookieValue(request.headers.cookie, cookieName);
      const sameBrowser = binding !== undefined && sameHash(sha256(binding), attempt.bindingHash);
      if (!sameBrowser && !confirmed) {
        // Not a wrong answer: the try is given back, the attempt waits for the confirmation.
        await store.releaseMailSignInTry(attempt.id);
        await audit.record("login", null, "mail_sign_in_confirmation_asked", ip);
        throw new OAuthError(
          400,
          "invalid_grant",
          CONFIRMATION_REQUIRED,
          {},
          { confirmation_required: true, requested_at: attempt.createdAt },
        );
      }
      return spend(attempt, ip);
    },
  };
}

export type MailSignIn = ReturnType<typeof createMailSignIn>;
