// The clients commands: create (from RFC 7591 metadata, as POST /clients
// takes it), list, show, rotate-secret and delete, through the same client
// registry as the service, as the operator (no admin user, no address).
import { Compile } from "typebox/compile";
import { HttpError } from "../errors.ts";
import { ClientCreate } from "../oidc/client-schemas.ts";
import { clientMetadata, createClientRegistry, MAX_SECRET_GRACE_SECONDS } from "../oidc/clients.ts";
import { toClientOut, withSecret } from "../oidc/present.ts";
import { CliError, printJson, UsageError, withStore } from "./common.ts";

const checkClient = Compile(ClientCreate);
/** Changes made here are the operator's: no admin user, no client address. */
const OPERATOR = { userId: null, clientAddress: null };

function oneClientId(args: string[], command: string): string {
  const [id, ...rest] = args;
  if (id === undefined || rest.length > 0) throw new UsageError(`${command} takes exactly one client_id`);
  return id;
}

export async function clientsCommand(command: string | undefined, args: string[]): Promise<void> {
  if (command === "create") {
    const [json, ...rest] = args;
    if (json === undefined || rest.length > 0) throw new UsageError("clients create takes one JSON argument");
    let input: unknown;
    try {
      input = JSON.parse(json);
    } catch {
      throw new CliError("the client metadata is not JSON");
    }
    const problems = checkClient.Errors(input);
    // The summary of an unknown field says which; its first entry only says "schema is false".
    const problem = problems.find((entry) => entry.keyword !== "boolean") ?? problems[0];
    if (problem) throw new CliError(`${problem.instancePath.slice(1) || "metadata"} ${problem.message}`);
    await withClients(async (clients) => {
      printJson(withSecret(await clients.register(clientMetadata(input as ClientCreate), OPERATOR)));
    });
  } else if (command === "list") {
    if (args.length > 0) throw new UsageError("clients list takes no arguments");
    await withClients(async (clients) => {
      process.stdout.write("client_id\tclient_name\ttoken_endpoint_auth_method\tgrant_types\tcreated_at\n");
      let after: string | undefined;
      for (;;) {
        const page = await clients.list({ limit: 500, ...(after ? { after } : {}) });
        for (const c of page) {
          process.stdout.write(
            `${[c.id, c.name, c.tokenEndpointAuthMethod, c.grantTypes.join(","), c.createdAt].join("\t")}\n`,
          );
        }
        if (page.length < 500) return;
        after = page.at(-1)?.id;
      }
    });
  } else if (command === "show") {
    const id = oneClientId(args, "clients show");
    await withClients(async (clients) => {
      const client = await clients.find(id);
      if (client === undefined) throw new CliError(`no client with the id ${id}`);
      printJson(toClientOut(client));
    });
  } else if (command === "rotate-secret") {
    const graceAt = args.indexOf("--grace-seconds");
    const grace = graceAt < 0 ? "0" : args[graceAt + 1];
    const rest = graceAt < 0 ? args : args.filter((_, index) => index !== graceAt && index !== graceAt + 1);
    const id = oneClientId(rest, "clients rotate-secret");
    if (grace === undefined || !/^\d{1,10}$/.test(grace) || Number(grace) > MAX_SECRET_GRACE_SECONDS)
      throw new UsageError(`--grace-seconds takes a whole number from 0 to ${MAX_SECRET_GRACE_SECONDS}`);
    await withClients(async (clients) => {
      const client = await clients.find(id);
      if (client === undefined) throw new CliError(`no client with the id ${id}`);
      if (!client.confidential) throw new CliError(`${id} is a public client: it has no secret`);
      const rotated = await clients.rotateSecret(id, Number(grace), OPERATOR);
      if (rotated === undefined) throw new CliError(`no client with the id ${id}`);
      printJson(withSecret(rotated));
    });
  } else if (command === "delete") {
    const id = oneClientId(args, "clients delete");
    await withClients(async (clients) => {
      if (!(await clients.remove(id, OPERATOR))) throw new CliError(`no client with the id ${id}`);
      process.stdout.write(`deleted client ${id}\n`);
    });
  } else {
    throw new UsageError(`unknown command: clients ${command ?? ""}`.trim());
  }
}

/**
 * The client registry over the configured store, checking back-channel logout URIs under the service's
 * WEBHOOK_REFUSE_PRIVATE_ADDRESSES; a refused metadata rule is one line, exit code 1.
 */
async function withClients(work: (clients: ReturnType<typeof createClientRegistry>) => Promise<void>): Promise<void> {
  await withStore(async (store, config) => {
    // The declared first-party audiences (without PUBLIC_URL, the listen address is not known here).
    const reserved = [config.tokenIssuer, config.tokenAudience, config.publicUrl].filter(
      (audience): audience is string => audience !== undefined,
    );
    try {
      await work(
        createClientRegistry(store, Date.now, undefined, {
          settings: config.webhooks,
          reservedAudiences: () => reserved,
        }),
      );
    } catch (error) {
      if (error instanceof HttpError) throw new CliError(error.detail);
      throw error;
    }
  });
}
