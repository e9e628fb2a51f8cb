// Where the service says it is: the base URL of its endpoints (PUBLIC_URL, or
// else the address it listens on) and the iss and aud of its tokens
// (TOKEN_ISSUER, defaulting to PUBLIC_URL and then to that base URL;
// TOKEN_AUDIENCE, defaulting to the issuer). Functions rather than strings
// because the listen address, and with PORT=0 its port, is known only once
// the server listens. Only a declared issuer and audience are required of
// tokens: a listen address differs between the instances of one deployment
// and across a restart on another port, and must not end their tokens.
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import type { Config } from "../config.ts";

export interface Addresses {
  /** Absolute URL the endpoints are published under, without a trailing slash. */
  baseUrl(): string;
  issuer(): string;
  audience(): string;
  /** The iss every token must carry: TOKEN_ISSUER or PUBLIC_URL; undefined when neither is set. */
  expectedIssuer: string | undefined;
  /** The aud every token must carry: TOKEN_AUDIENCE, else the declared issuer; undefined without either. */
  expectedAudience: string | undefined;
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

export function createAddresses(app: FastifyInstance, config: Config): Addresses {
  let listening: string | undefined;
  app.addHook("onListen", function rememberListenAddress(done) {
    const address = app.server.address() as AddressInfo | null;
    if (address && typeof address === "object") listening = urlOf(address.address, address.port);
    done();
  });
  const baseUrl = () => config.publicUrl ?? listening ?? urlOf(config.host, config.port);
  const issuer = () => config.tokenIssuer ?? baseUrl();
  return {
    baseUrl,
    issuer,
    audience: () => config.tokenAudience ?? issuer(),
    expectedIssuer: config.tokenIssuer,
    expectedAudience: config.tokenAudience ?? config.tokenIssuer,
  };
}
