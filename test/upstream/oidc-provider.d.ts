// panva's oidc-provider ships no types; the tests use it as the upstream provider only.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";
  export default class Provider {
    constructor(issuer: string, configuration: unknown);
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
  }
}
