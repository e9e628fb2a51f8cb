// The token endpoint's grants by grant_type: the table the route dispatches
// on (core/token-routes.ts) and that discovery publishes as
// grant_types_supported, in the order the grants were added. The core
// capability adds the grants that are always on (core/install.ts); a
// capability that brings a grant adds it when it installs (upstream sign-in,
// OpenID Connect's authorization_code; next, a device grant), so a new grant
// is a module in its capability's folder and one add() in its install.ts.
// Every capability installs before the service answers its first request,
// so the table is complete by then.
import type { Grant } from "./grant.ts";

export interface GrantRegistry {
  /**
   * Adds a grant; a grant of a type already present takes its place (and its position): OpenID
   * Connect's refresh grant, which also refreshes the sessions its clients started.
   */
  add(grant: Grant): void;
  /** The grant of a grant_type, if the endpoint answers it. */
  get(type: string): Grant | undefined;
  /** Every grant_type the endpoint answers, in the order added. */
  types(): string[];
}

export function createGrantRegistry(): GrantRegistry {
  const grants = new Map<string, Grant>();
  return {
    add: (grant) => void grants.set(grant.type, grant),
    get: (type) => grants.get(type),
    types: () => [...grants.keys()],
  };
}
