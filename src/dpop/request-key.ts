// The DPoP key a token request proved (RFC 9449 section 5), from the token
// endpoint's check (dpop.ts) to the grants that bind what they issue to it:
// remembered by request, and gone with it. A request without a proof has
// none, and its grant issues exactly what it issued before DPoP.
import type { FastifyRequest } from "fastify";

const proven = new WeakMap<FastifyRequest, string>();

export function rememberProofKey(request: FastifyRequest, jkt: string): void {
  proven.set(request, jkt);
}

/** The thumbprint of the key the request's DPoP proof was signed with, if it sent a good one. */
export function proofKeyOf(request: FastifyRequest): string | undefined {
  return proven.get(request);
}
