// The proof that the sign-in an authorization request asked for has happened
// (prompt=login, max_age, a multi-factor acr_values): without it, the request
// that the sign-in page brings back would ask for a sign-in again, for ever.
// When the endpoint sends the browser to sign in for such a request, it sets a
// cookie holding the time and a SHA-256 of the request's every parameter
// (client, redirect URI, state, nonce, PKCE challenge, scope, prompt, max_age,
// acr_values, ...), with an HMAC keyed from the signing material; when the
// same request comes back in the same browser within PROOF_SECONDS, a browser
// session that signed in at or after that time satisfies it. A cookie, not a
// URL parameter: it never shows in a Referer, a history or a log, and a proof
// is worth nothing in another browser, for another request or once expired.
// Any instance checks it with the shared signing material; nothing is kept in
// memory. The cookie holds the few most recent proofs, so two requests
// pending in two tabs do not undo each other, and it stays small whatever a
// page makes the browser ask.
import { hash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { cookieValue } from "../platform/cookies.ts";
import type { BrowserSessions } from "./browser-session.ts";

/** How long after the endpoint sent the browser to sign in the sign-in still counts for the request. */
export const PROOF_SECONDS = 600;
/** Proofs kept at once (one per pending request, newest first). */
export const MAX_PROOFS = 4;
const PURPOSE = "reauthentication";

export interface Reauthentication {
  /** Remembers in the browser that the request with this digest was sent to sign in now. */
  require(request: FastifyRequest, reply: FastifyReply, digest: string): void;
  /** When this browser was sent to sign in for this request, if the proof holds; undefined otherwise. */
  since(request: FastifyRequest, digest: string): number | undefined;
  /** Forgets the request's proof, once it has served. */
  spend(request: FastifyRequest, reply: FastifyReply, digest: string): void;
}

/**
 * The digest of an authorization request: its parameters (query or form) sorted by name, so that
 * the GET the sign-in page returns to and the POST that started it agree, and any change to any
 * parameter gives another digest.
 */
export function requestDigest(params: Record<string, string | string[]>): string {
  const entries = Object.entries(params).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return hash("sha256", JSON.stringify(entries), "base64url");
}

interface Proof {
  time: number;
  digest: string;
  text: string;
}

export function createReauthentication(options: {
  browserSessions: Pick<BrowserSessions, "formToken" | "checkFormToken">;
  secure: boolean;
  clock: () => number;
}): Reauthentication {
  const { browserSessions, secure, clock } = options;
  const cookieName = secure ? "__Host-uts_reauth" : "uts_reauth";
  const attributes = `Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`;
  const now = () => Math.floor(clock() / 1000);

  /** The cookie's proofs that this service made and that have not expired; anything else is dropped. */
  function proofs(request: FastifyRequest): Proof[] {
    const value = cookieValue(request.headers.cookie, cookieName) ?? "";
    const found: Proof[] = [];
    for (const text of value.split("~").slice(0, MAX_PROOFS)) {
      const parts = text.split(".");
      if (parts.length !== 3) continue;
      const [time = "", digest = "", mac] = parts;
      const seconds = Number(time);
      if (!/^\d{1,12}$/.test(time) || !/^[\w-]{43}$/.test(digest)) continue;
      if (now() - seconds > PROOF_SECONDS) continue;
      if (!browserSessions.checkFormToken(`${time}.${digest}`, PURPOSE, mac)) continue;
      found.push({ time: seconds, digest, text });
    }
    return found;
  }

  function write(reply: FastifyReply, kept: readonly Proof[]): void {
    const value = kept.map((proof) => proof.text).join("~");
    reply.header("set-cookie", `${cookieName}=${value}; ${attributes}; Max-Age=${value === "" ? 0 : PROOF_SECONDS}`);
  }

  return {
    require(request, reply, digest) {
      const time = String(now());
      const text = `${time}.${digest}.${browserSessions.formToken(`${time}.${digest}`, PURPOSE)}`;
      const others = proofs(request).filter((proof) => proof.digest !== digest);
      write(reply, [{ time: Number(time), digest, text }, ...others].slice(0, MAX_PROOFS));
    },
    since(request, digest) {
      return proofs(request).find((proof) => proof.digest === digest)?.time;
    },
    spend(request, reply, digest) {
      write(
        reply,
        proofs(request).filter((proof) => proof.digest !== digest),
      );
    },
  };
}
