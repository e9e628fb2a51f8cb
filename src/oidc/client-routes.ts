// The clients resource, for admins, under the spec's route conventions:
// GET /clients lists, POST creates (201, Location, the secret shown once),
// GET/PUT/PATCH/DELETE /clients/{id}; POST /clients/{id}/secret makes a new
// secret (201, shown once) while the old one works for the grace period the
// admin asks for. Bodies use RFC 7591's metadata names and answers its
// response fields. The rules are clients.ts's; the audit events (about the
// admin who acted) are written with each change.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import type { Guards } from "../auth/guard.ts";
import { HttpError, NOT_ENOUGH_PRIVILEGES, notFound } from "../errors.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import {
  ClientCreate,
  ClientIdParams,
  ClientListQuery,
  ClientOut,
  ClientPage,
  ClientPatch,
  ClientWithSecretOut,
  SecretRotation,
} from "./client-schemas.ts";
import {
  type Actor,
  type ClientMetadataInput,
  type ClientRegistry,
  clientMetadata,
  metadataInputOf,
} from "./clients.ts";
import { toClientOut, withSecret } from "./present.ts";

export interface ClientRouteOptions {
  clients: ClientRegistry;
  guards: Guards;
}

export const CLIENT_NOT_FOUND = "Client not found";
export const NO_SECRET_TO_ROTATE = "A public client (token_endpoint_auth_method 'none') has no secret";
export const FIXED_CLIENT_TYPE =
  "token_endpoint_auth_method: a client stays public ('none') or confidential; register a new client instead";

const errors = {
  401: UnauthorizedResponse,
  403: errorResponse("Authenticated, but not an admin.", NOT_ENOUGH_PRIVILEGES),
  404: errorResponse("No client with this id.", CLIENT_NOT_FOUND),
  415: errorResponse("The body is not JSON.", "Unsupported Media Type"),
  422: errorResponse(
    "The body, path or query is invalid, or the metadata breaks a rule (RFC 7591, OpenID Connect Registration).",
    "redirect_uris: must not have a fragment",
  ),
};

function actor(request: FastifyRequest): Actor {
  return { userId: request.user?.id ?? null, clientAddress: request.ip };
}

export const clientRoutes: FastifyPluginAsyncTypebox<ClientRouteOptions> = async (app, { clients, guards }) => {
  const admins = { preHandler: [guards.authenticate, guards.requireAdmin] };

  /**
   * Applies a change (PUT, PATCH): the metadata after it is checked whole, and a client never turns
   * from public to confidential or back.
   */
  async function change(
    request: FastifyRequest,
    id: string,
    merge: (current: ClientMetadataInput) => ClientMetadataInput,
  ) {
    const current = await clients.find(id);
    if (current === undefined) throw notFound(CLIENT_NOT_FOUND);
    const metadata = clientMetadata(merge(metadataInputOf(current)));
    if ((metadata.tokenEndpointAuthMethod === "none") !== !current.confidential)
      throw new HttpError(422, FIXED_CLIENT_TYPE);
    const client = await clients.update(id, metadata, actor(request));
    if (client === undefined) throw notFound(CLIENT_NOT_FOUND);
    return toClientOut(client);
  }
  const changeResponses = {
    200: ClientOut,
    401: errors[401],
    403: errors[403],
    404: errors[404],
    415: errors[415],
    422: errors[422],
  };

  app.get(
    "/clients",
    {
      ...admins,
      schema: {
        operationId: "listClients",
        tags: ["clients"],
        summary: "List OAuth clients (admins)",
        description: "Oldest first, in pages: follow `next` (or pass `next_cursor` as `cursor`) until it is null.",
        security: BEARER_SECURITY,
        querystring: ClientListQuery,
        response: { 200: ClientPage, 401: errors[401], 403: errors[403], 422: errors[422] },
      },
    },
    async function listClients(request) {
      const { limit = 20, cursor } = request.query;
      // One extra row tells whether a next page exists without a count query.
      const rows = await clients.list({ limit: limit + 1, ...(cursor === undefined ? {} : { after: cursor }) });
      const items = rows.slice(0, limit);
      const nextCursor = rows.length > limit ? (items.at(-1)?.id ?? null) : null;
      const next = nextCursor ? `/clients?${new URLSearchParams({ limit: String(limit), cursor: nextCursor })}` : null;
      return { items: items.map(toClientOut), next_cursor: nextCursor, next };
    },
  );

  app.post(
    "/clients",
    {
      ...admins,
      schema: {
        operationId: "createClient",
        tags: ["clients"],
        summary: "Register an OAuth client (admins)",
        description:
          "RFC 7591 metadata in, RFC 7591 fields out. A confidential client's `client_secret` is in this answer " +
          "only: random (256 bits), stored as a hash. A public client (`none`) gets none. `Location` names the new " +
          "client.",
        security: BEARER_SECURITY,
        body: ClientCreate,
        response: {
          201: ClientWithSecretOut,
          401: errors[401],
          403: errors[403],
          415: errors[415],
          422: errors[422],
        },
      },
    },
    async function createClient(request, reply) {
      const registered = await clients.register(clientMetadata(request.body), actor(request));
      reply.code(201).header("location", `/clients/${registered.client.id}`);
      return withSecret(registered);
    },
  );

  app.get(
    "/clients/:id",
    {
      ...admins,
      schema: {
        operationId: "readClient",
        tags: ["clients"],
        summary: "Read an OAuth client (admins)",
        security: BEARER_SECURITY,
        params: ClientIdParams,
        response: { 200: ClientOut, 401: errors[401], 403: errors[403], 404: errors[404], 422: errors[422] },
      },
    },
    async function readClient(request) {
      const client = await clients.find(request.params.id);
      if (client === undefined) throw notFound(CLIENT_NOT_FOUND);
      return toClientOut(client);
    },
  );

  app.put(
    "/clients/:id",
    {
      ...admins,
      schema: {
        operationId: "replaceClient",
        tags: ["clients"],
        summary: "Replace an OAuth client's metadata (admins)",
        description:
          "A field left out takes its default. The secret stays (see `POST /clients/{id}/secret`); a client " +
          "cannot turn from public to confidential or back (422).",
        security: BEARER_SECURITY,
        params: ClientIdParams,
        body: ClientCreate,
        response: changeResponses,
      },
    },
    async function replaceClient(request) {
      return change(request, request.params.id, () => request.body);
    },
  );

  app.patch(
    "/clients/:id",
    {
      ...admins,
      schema: {
        operationId: "updateClient",
        tags: ["clients"],
        summary: "Update some of an OAuth client's metadata (admins)",
        description: "Only the fields sent change; the result must still follow the rules (422 otherwise).",
        security: BEARER_SECURITY,
        params: ClientIdParams,
        body: ClientPatch,
        response: changeResponses,
      },
    },
    async function updateClient(request) {
      const body = request.body ?? {};
      return change(request, request.params.id, (current) => ({ ...current, ...body }));
    },
  );

  app.delete(
    "/clients/:id",
    {
      ...admins,
      schema: {
        operationId: "deleteClient",
        tags: ["clients"],
        summary: "Delete an OAuth client (admins)",
        description:
          "204 with no body. Its secret stops working at once, and the tokens issued to it introspect as inactive. " +
          "Its users' consents are forgotten and its sessions end (their refresh tokens stop working); with a " +
          "`backchannel_logout_uri`, it receives a logout token for each browser session they began in.",
        security: BEARER_SECURITY,
        params: ClientIdParams,
        response: {
          204: { type: "null", description: "Deleted." },
          401: errors[401],
          403: errors[403],
          404: errors[404],
          422: errors[422],
        },
      },
    },
    async function deleteClient(request, reply) {
      if (!(await clients.remove(request.params.id, actor(request)))) throw notFound(CLIENT_NOT_FOUND);
      reply.code(204).send(null);
    },
  );

  app.post(
    "/clients/:id/secret",
    {
      ...admins,
      schema: {
        operationId: "rotateClientSecret",
        tags: ["clients"],
        summary: "Give an OAuth client a new secret (admins)",
        description:
          "The new `client_secret` is in this answer only. The current secret keeps working for `grace_seconds` " +
          "(0 by default: it stops at once; at most 30 days), so the client's deployments can switch over. 409 for " +
          "a public client, which has no secret.",
        security: BEARER_SECURITY,
        params: ClientIdParams,
        body: SecretRotation,
        response: {
          201: ClientWithSecretOut,
          401: errors[401],
          403: errors[403],
          404: errors[404],
          409: errorResponse("The client is public and has no secret.", NO_SECRET_TO_ROTATE),
          415: errors[415],
          422: errors[422],
        },
      },
    },
    async function rotateClientSecret(request, reply) {
      const current = await clients.find(request.params.id);
      if (current === undefined) throw notFound(CLIENT_NOT_FOUND);
      if (!current.confidential) throw new HttpError(409, NO_SECRET_TO_ROTATE);
      const rotated = await clients.rotateSecret(request.params.id, request.body?.grace_seconds ?? 0, actor(request));
      if (rotated === undefined) throw notFound(CLIENT_NOT_FOUND);
      reply.code(201).header("location", `/clients/${rotated.client.id}`);
      return withSecret(rotated);
    },
  );
};
