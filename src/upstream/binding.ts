// The cookie that binds a pending upstream sign-in (and its ticket) to the
// browser that started it: a random value whose SHA-256 the database keeps,
// so a callback URL or ticket carried to another browser opens nothing.
// HttpOnly, SameSite=Lax (sent on the provider's top-level redirect back),
// Secure with the __Host- prefix under https; it lives as long as a pending
// sign-in.
import type { FastifyReply, FastifyRequest } from "fastify";
import { cookieValue } from "../platform/cookies.ts";
import { PENDING_SECONDS } from "./sign-in.ts";

export interface BindingCookie {
  read(request: FastifyRequest): string | undefined;
  set(reply: FastifyReply, value: string): void;
}

export function bindingCookie(secure: boolean): BindingCookie {
  const name = secure ? "__Host-uts_upstream" : "uts_upstream";
  const attributes = `Path=/; HttpOnly; SameSite=Lax; Max-Age=${PENDING_SECONDS}${secure ? "; Secure" : ""}`;
  return {
    read: (request) => cookieValue(request.headers.cookie, name),
    set(reply, value) {
      reply.header("set-cookie", `${name}=${value}; ${attributes}`);
    },
  };
}
