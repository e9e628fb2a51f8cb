// DPoP as the endpoints use it (RFC 9449): one shared service, built once
// (platform/services.ts). The token endpoint asks for the proof's key of a
// token request (section 5) and the grants bind what they issue to it
// (keyOf); the resource endpoints (the API's token check, userinfo) check a
// DPoP-bound token's proof with its `ath` (section 7). Refusals are counted
// by outcome (metrics) and, at the token endpoint, written to the audit
// trail with their reason. The nonce of the moment goes out in `DPoP-Nonce`
// with every answer to a request that carried a proof.
import type { FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "../errors.ts";
import { OAuthError } from "../oauth-errors.ts";
import type { Audit } from "../platform/audit.ts";
import { DPOP_SIGNING_ALGORITHMS, DpopRefusal, type ProofVerifier } from "./proof.ts";
import { proofKeyOf, rememberProofKey } from "./request-key.ts";

export { DPOP_SIGNING_ALGORITHMS, DpopRefusal } from "./proof.ts";

/** Where a proof was checked, for the metrics. */
export type ProofPlace = "token" | "resource";

export interface Dpop {
  /** The algorithms a proof may use (discovery's dpop_signing_alg_values_supported). */
  readonly algorithms: readonly string[];
  /**
   * At the token endpoint: the thumbprint of the request's proof key, checked, remembered for the
   * grants (keyOf); undefined when the request has no DPoP header. A refused proof throws the RFC's
   * OAuthError (400 invalid_dpop_proof, or use_dpop_nonce with the nonce), audited.
   */
  tokenRequestKey(request: FastifyRequest, reply: FastifyReply): Promise<string | undefined>;
  /** The proof key a token request was checked with (its grants bind what they issue to it). */
  keyOf(request: FastifyRequest): string | undefined;
  /**
   * At a resource endpoint, for a token presented with `Authorization: DPoP`: its proof checked
   * against the request and the token (`ath`), its key the token's `cnf.jkt`. Throws DpopRefusal.
   */
  checkResourceProof(request: FastifyRequest, reply: FastifyReply, token: string, jkt: string): Promise<void>;
  /** The 401 of a resource endpoint for a DPoP refusal, with its challenge (and nonce). */
  resourceRefusal(refusal: DpopRefusal, reply: FastifyReply, detail: string): HttpError;
  /** The 401 for a DPoP-bound token presented as a bearer token (RFC 9449 section 7.2). */
  boundTokenAsBearer(detail: string): HttpError;
}

/** The path of a request's URL, without its query (the proof's htu is compared without it). */
function pathOf(request: FastifyRequest): string {
  const query = request.url.indexOf("?");
  return query < 0 ? request.url : request.url.slice(0, query);
}

/** RFC 9449 section 7.1: a DPoP challenge, with the algorithms a proof may use. */
export function dpopChallenge(error?: string, description?: string): string {
  const parts = [];
  if (error !== undefined) parts.push(`error="${error}"`);
  if (description !== undefined) parts.push(`error_description="${description.replaceAll('"', "'")}"`);
  parts.push(`algs="${DPOP_SIGNING_ALGORITHMS.join(" ")}"`);
  return `DPoP ${parts.join(", ")}`;
}

export function createDpop({
  proofs,
  baseUrl,
  audit,
  observe,
}: {
  proofs: ProofVerifier;
  /** The service's public base URL (addresses.ts): the proofs' htu is this and the path. */
  baseUrl: () => string;
  audit: Audit;
  observe?: (place: ProofPlace, outcome: string) => void;
}): Dpop {
  /** Every answer to a request with a proof carries the current nonce, so the client keeps a fresh one. */
  function handOutNonce(reply: FastifyReply) {
    const nonce = proofs.currentNonce();
    if (nonce !== undefined) reply.header("dpop-nonce", nonce);
    return nonce;
  }

  return {
    algorithms: DPOP_SIGNING_ALGORITHMS,

    async tokenRequestKey(request, reply) {
      const header = request.headers.dpop;
      if (header === undefined) return undefined;
      const nonce = handOutNonce(reply);
      try {
        const { jkt } = await proofs.verify(header, { method: request.method, url: `${baseUrl()}${pathOf(request)}` });
        observe?.("token", "accepted");
        rememberProofKey(request, jkt);
        return jkt;
      } catch (error) {
        if (!(error instanceof DpopRefusal)) throw error;
        observe?.("token", error.reason);
        // A nonce asked for is the protocol's normal first step, not an attack: not audited.
        if (error.code !== "use_dpop_nonce") await audit.record("dpop", null, `refused_${error.reason}`, request.ip);
        throw new OAuthError(
          400,
          error.code === "invalid_token" ? "invalid_dpop_proof" : error.code,
          error.message,
          nonce === undefined ? {} : { "dpop-nonce": nonce },
        );
      }
    },

    keyOf: proofKeyOf,

    async checkResourceProof(request, reply, token, jkt) {
      handOutNonce(reply);
      try {
        const proof = await proofs.verify(request.headers.dpop, {
          method: request.method,
          url: `${baseUrl()}${pathOf(request)}`,
          accessToken: token,
        });
        if (proof.jkt !== jkt)
          throw new DpopRefusal("invalid_dpop_proof", "wrong_key", "The DPoP proof's key is not the token's");
        observe?.("resource", "accepted");
      } catch (error) {
        if (error instanceof DpopRefusal) observe?.("resource", error.reason);
        throw error;
      }
    },

    resourceRefusal(refusal, reply, detail) {
      const nonce = reply.getHeader("dpop-nonce");
      const challenge = dpopChallenge(refusal.code, refusal.message);
      return new HttpError(401, detail, {
        "www-authenticate": `Bearer, ${challenge}`,
        ...(typeof nonce === "string" ? { "dpop-nonce": nonce } : {}),
      });
    },

    boundTokenAsBearer(detail) {
      observe?.("resource", "bound_token_as_bearer");
      return new HttpError(401, detail, {
        "www-authenticate": `Bearer, ${dpopChallenge("invalid_token", "The access token is DPoP-bound: send it with Authorization: DPoP and a proof")}`,
      });
    },
  };
}
