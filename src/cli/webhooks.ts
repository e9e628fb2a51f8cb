// The webhooks commands: list, create (the secret shown once), rotate,
// enable, delete, the delivery log and a redelivery, over the same
// endpoints module as the /webhooks resource.
import { createWebhookEndpoints, webhookAudit } from "../webhooks/endpoints.ts";
import { WEBHOOK_EVENT_TYPES } from "../webhooks/events.ts";
import { webhookSecretSealer } from "../webhooks/secrets.ts";
import { CliError, UsageError, withStore } from "./common.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The webhooks commands; `args` after the subcommand. Each names the endpoint by id. */
export async function webhooks(command: string | undefined, args: string[]): Promise<void> {
  const [id, ...rest] = args;
  const needsId = command !== "list" && command !== "create";
  if (needsId && (id === undefined || !UUID.test(id))) throw new UsageError(`webhooks ${command} takes an endpoint id`);
  const write = (line: (string | number | null)[]) => process.stdout.write(`${line.map((v) => v ?? "").join("\t")}\n`);
  await withStore(async (store, config) => {
    const sealer = webhookSecretSealer(config.mfa.encryptionKeys, [...config.signingSecrets, ...config.signingKeys]);
    const endpoints = createWebhookEndpoints(store, sealer, config.webhooks, Date.now);
    const endpointId = (id ?? "").toLowerCase();
    if (command === "list") {
      if (args.length > 0) throw new UsageError("webhooks list takes no arguments");
      write(["id", "enabled", "url", "event_types", "disabled_reason"]);
      for (const endpoint of await store.listWebhookEndpoints({ limit: 1000 })) {
        write([
          endpoint.id,
          String(endpoint.enabled),
          endpoint.url,
          endpoint.eventTypes.join(","),
          endpoint.disabledReason,
        ]);
      }
    } else if (command === "create") {
      const [url, types, flag, description, ...extra] = args;
      if (
        url === undefined ||
        types === undefined ||
        extra.length > 0 ||
        (flag !== undefined && flag !== "--description")
      )
        throw new UsageError("webhooks create takes <url> <type>[,<type>...] [--description <text>]");
      const eventTypes = [...new Set(types.split(","))];
      const unknown = eventTypes.find((type) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(type));
      if (unknown) throw new CliError(`unknown event type ${unknown}; known: ${WEBHOOK_EVENT_TYPES.join(", ")}`);
      if (!URL.canParse(url) || !/^https?:\/\//.test(url)) throw new CliError("the url must be an http or https URL");
      await endpoints.checkUrl(url).catch((error: Error) => {
        throw new CliError(error.message);
      });
      const created = await endpoints.create(
        { url, eventTypes, enabled: true, description: description ?? null },
        null,
        null,
      );
      process.stdout.write(`created ${created.endpoint.id}\nsecret ${created.secret}\n(shown this once)\n`);
    } else if (command === "rotate" && rest.length === 0) {
      const rotated = await endpoints.rotate(endpointId, null, null);
      if (!rotated) throw new CliError(`no webhook endpoint with the id ${id}`);
      process.stdout.write(
        `secret ${rotated.secret}\n(shown this once; the previous one signs too until ${rotated.endpoint.previousSecretUntil})\n`,
      );
    } else if (command === "enable" && rest.length === 0) {
      if (
        !(await store.updateWebhookEndpoint(endpointId, { enabled: true }, [
          webhookAudit("endpoint_updated", null, null),
        ]))
      )
        throw new CliError(`no webhook endpoint with the id ${id}`);
      process.stdout.write(`enabled ${endpointId}\n`);
    } else if (command === "delete" && rest.length === 0) {
      if (!(await store.removeWebhookEndpoint(endpointId, [webhookAudit("endpoint_deleted", null, null)])))
        throw new CliError(`no webhook endpoint with the id ${id}`);
      process.stdout.write(`deleted ${endpointId}\n`);
    } else if (command === "deliveries" && rest.length === 0) {
      if (!(await store.findWebhookEndpoint(endpointId))) throw new CliError(`no webhook endpoint with the id ${id}`);
      write(["created_at", "event_id", "type", "attempt", "status_code", "duration_ms", "error"]);
      for (const a of await store.listWebhookAttempts(endpointId, { limit: 100 })) {
        write([a.createdAt, a.eventId, a.type, a.attempt, a.statusCode, a.durationMs, a.error]);
      }
    } else if (command === "redeliver" && rest.length === 1 && UUID.test(rest[0] as string)) {
      const eventId = (rest[0] as string).toLowerCase();
      if (!(await store.redeliverWebhookEvent(endpointId, eventId, new Date().toISOString())))
        throw new CliError(`no event ${eventId} for the webhook endpoint ${id}`);
      process.stdout.write(`event ${eventId} queued again; the running service delivers it within seconds\n`);
    } else throw new UsageError(`unknown command: webhooks ${[command, ...args].filter(Boolean).join(" ")}`);
  });
}
