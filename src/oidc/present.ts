// A client as the API and the CLI show it: RFC 7591 section 3.2.1's response
// fields (client_id, the metadata, client_id_issued_at, client_secret_expires_at
// 0 for a confidential client), and its secret only in the one answer that
// made it.
import { type Client, metadataInputOf, type Registered } from "./clients.ts";

/** RFC 7591 section 3.2.1's response fields for a client. */
export function toClientOut(client: Client) {
  // Issue 37: brand_color only when it is set, so that a client's answer is what it was without one.
  const { brand_color, ...metadata } = metadataInputOf(client);
  return {
    client_id: client.id,
    ...metadata,
    ...(brand_color === null ? {} : { brand_color }),
    client_id_issued_at: Math.floor(Date.parse(client.createdAt) / 1000),
    ...(client.confidential
      ? { client_secret_expires_at: 0, previous_secret_expires_at: client.previousSecretExpiresAt }
      : {}),
    registered_by: client.registeredBy,
  };
}

/** The client with its secret, when one was just made: the only answer that carries it. */
export function withSecret({ client, secret }: Registered) {
  return { ...toClientOut(client), ...(secret === undefined ? {} : { client_secret: secret }) };
}
