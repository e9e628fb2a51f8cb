// The routes reference, docs/reference/routes.md, written from the OpenAPI
// document the service itself serves at /openapi.json, so that the page and
// the service cannot disagree: `npm run docs:routes` writes it, and
// test/docs-routes.test.ts fails when the file differs from what this script
// would write. The app is built as the tests build it (buildApp on an
// in-memory SQLite store), once with the defaults and once per setting that
// adds routes, so each route says what turns it on.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildApp } from "../src/app.ts";
import { type Env, loadConfig } from "../src/config.ts";
import { openStore } from "../src/store/open.ts";
import { githubSlug } from "./check-links.ts";

const ROOT = resolve(import.meta.dirname, "..");
export const ROUTES_FILE = join(ROOT, "docs", "reference", "routes.md");

/** Settings that add routes, each with the words the page uses for it. Example values only. */
const FEATURES: { when: string; env: Env }[] = [
  {
    when: "OpenID Connect is on (always on SQLite; on PostgreSQL, with `OIDC_SIGNING_KEY_FILE`)",
    env: { PUBLIC_URL: "https://id.example.com" },
  },
  {
    when: "`UPSTREAM_PROVIDERS` names a provider",
    env: {
      UPSTREAM_PROVIDERS: "github",
      UPSTREAM_GITHUB_CLIENT_ID: "example",
      UPSTREAM_GITHUB_CLIENT_SECRET: "example",
    },
  },
  {
    when: "`PASSWORDLESS_MAIL` is not `off` (by default, when `MAIL_URL` names an SMTP server)",
    env: { MAIL_URL: "smtp://mail.example.com:587", PASSWORDLESS_MAIL: "both" },
  },
  {
    when: "`DYNAMIC_CLIENT_REGISTRATION=on`",
    env: {
      DYNAMIC_CLIENT_REGISTRATION: "on",
      REGISTRATION_ACCESS_TOKEN: "an-example-initial-access-token-of-32-bytes",
    },
  },
];

type Schema = {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
};
type Parameter = { name: string; in: string; required?: boolean; description?: string; schema?: Schema };
type Media = { schema?: Schema };
type Response = { description?: string; headers?: Record<string, unknown>; content?: Record<string, Media> };
type Operation = {
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Record<string, unknown>[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, Media>; description?: string };
  responses?: Record<string, Response>;
};
type Document = {
  info: { title: string; description?: string };
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  webhooks?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema>; securitySchemes?: Record<string, { description?: string }> };
};

/**
 * The OpenAPI document of an app built with these settings on an in-memory store. OpenID Connect is on
 * for every SQLite database since issue 35; without PUBLIC_URL in `env` it is taken off here, as on
 * PostgreSQL without OIDC_SIGNING_KEY_FILE, so that the page still says which routes depend on it.
 */
async function openApiDocument(env: Env): Promise<Document> {
  const loaded = loadConfig({ DATABASE_URL: "sqlite::memory:", LOG_LEVEL: "silent", ...env }).config;
  const config = env.PUBLIC_URL === undefined ? { ...loaded, oidcSigningKeys: [] } : loaded;
  const store = await openStore(config.database);
  try {
    const app = await buildApp({ config, store });
    try {
      return (await app.inject({ method: "GET", url: "/openapi.json" })).json() as Document;
    } finally {
      await app.close();
    }
  } finally {
    await store.close();
  }
}

function operationKeys(doc: Document): Set<string> {
  const keys = new Set<string>();
  for (const [path, operations] of Object.entries(doc.paths))
    for (const method of Object.keys(operations)) keys.add(`${method} ${path}`);
  return keys;
}

/** One line of a table cell: no line breaks, no column separators. */
function cell(text: string | undefined): string {
  return (text ?? "")
    .replace(/\s*\n\s*/g, " ")
    .replace(/\|/g, "\\|")
    .trim();
}

function schemaName(ref: string): string {
  return ref.split("/").pop() as string;
}

/** A schema in a few words: its type, format, values; a named schema links to its section below. */
function typeOf(schema: Schema | undefined): string {
  if (!schema) return "";
  if (schema.$ref) {
    const name = schemaName(schema.$ref);
    return `[${name}](#${githubSlug(name)})`;
  }
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((value) => `\`${JSON.stringify(value)}\``).join(", ");
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return [...new Set(union.map(typeOf))].join(" or ");
  if (schema.allOf) return schema.allOf.map(typeOf).join(" and ");
  const type = Array.isArray(schema.type) ? schema.type.join(" or ") : schema.type;
  if (type === "array") return `array of ${typeOf(schema.items) || "any"}`;
  if (!type) return schema.properties ? "object" : "any";
  return schema.format ? `${type} (${schema.format})` : type;
}

function fieldsTable(schema: Schema, components: Record<string, Schema>): string[] {
  const target = schema.$ref ? components[schemaName(schema.$ref)] : schema;
  if (!target?.properties) return [];
  const required = new Set(target.required ?? []);
  return [
    "| Field | Type | Required | Meaning |",
    "|---|---|---|---|",
    ...Object.entries(target.properties).map(
      ([name, property]) =>
        `| \`${name}\` | ${cell(typeOf(property))} | ${required.has(name) ? "yes" : "no"} | ${cell(property.description)} |`,
    ),
  ];
}

function securityOf(operation: Operation): string {
  const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
  if (schemes.length === 0) return "none declared (the description says who may call it)";
  return schemes.map((name) => `\`${name}\``).join(" or ");
}

function renderOperation(
  method: string,
  path: string,
  operation: Operation,
  doc: Document,
  onlyWhen: string | undefined,
): string[] {
  const components = doc.components?.schemas ?? {};
  const out = [`### \`${method.toUpperCase()} ${path}\``, ""];
  if (operation.summary) out.push(`**${cell(operation.summary)}.**`, "");
  if (operation.description) out.push(operation.description.trim(), "");
  if (onlyWhen) out.push(`*Served only while ${onlyWhen}.*`, "");
  out.push(`Security: ${securityOf(operation)}.`, "");
  const parameters = operation.parameters ?? [];
  if (parameters.length > 0) {
    out.push("| Parameter | In | Type | Required | Meaning |", "|---|---|---|---|---|");
    for (const parameter of parameters)
      out.push(
        `| \`${parameter.name}\` | ${parameter.in} | ${cell(typeOf(parameter.schema))} | ${parameter.required ? "yes" : "no"} | ${cell(parameter.description)} |`,
      );
    out.push("");
  }
  for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
    out.push(`Request body (\`${type}\`${operation.requestBody?.required ? "" : ", optional"}):`, "");
    const fields = media.schema ? fieldsTable(media.schema, components) : [];
    out.push(...(fields.length > 0 ? fields : [typeOf(media.schema) || "any"]), "");
  }
  const responses = Object.entries(operation.responses ?? {});
  if (responses.length > 0) {
    out.push("| Status | Meaning | Body | Headers |", "|---|---|---|---|");
    for (const [status, response] of responses) {
      const bodies = Object.entries(response.content ?? {}).map(([type, media]) =>
        type === "application/json" ? typeOf(media.schema) : `\`${type}\``,
      );
      const headers = Object.keys(response.headers ?? {}).map((name) => `\`${name}\``);
      out.push(`| ${status} | ${cell(response.description)} | ${cell(bodies.join("; "))} | ${headers.join(", ")} |`);
    }
    out.push("");
  }
  return out;
}

/** The page, from the document with every optional route on and the ones each setting adds. */
export async function routesReference(): Promise<string> {
  const base = operationKeys(await openApiDocument({}));
  const added = new Map<string, string>();
  for (const feature of FEATURES)
    for (const key of operationKeys(await openApiDocument(feature.env)))
      if (!base.has(key) && !added.has(key)) added.set(key, feature.when);
  const doc = await openApiDocument(Object.assign({}, ...FEATURES.map((feature) => feature.env)));

  const tagOrder = (doc.tags ?? []).map((tag) => tag.name);
  const byTag = new Map<string, [string, string, Operation][]>();
  for (const [path, operations] of Object.entries(doc.paths))
    for (const [method, operation] of Object.entries(operations)) {
      const tag = operation.tags?.[0] ?? "other";
      if (!tagOrder.includes(tag)) tagOrder.push(tag);
      byTag.set(tag, [...(byTag.get(tag) ?? []), [method, path, operation]]);
    }
  const tags = tagOrder.filter((tag) => byTag.has(tag));
  const tagDescription = (name: string) => doc.tags?.find((tag) => tag.name === name)?.description;

  const out = [
    "# Routes",
    "",
    "<!-- Generated by scripts/docs-routes.ts (npm run docs:routes) from the OpenAPI document; do not edit. -->",
    "",
    "Every route of the API as the service's own OpenAPI document describes it (`GET /openapi.json`,",
    "shown at `/docs`). This page is written from that document by `npm run docs:routes`",
    "(`scripts/docs-routes.ts`), and a test fails when the two differ: change the route's schema or",
    "description in the code, then run the script. The pages a browser opens (sign-in, consent, the",
    "account pages, the authorization and logout endpoints) are not in the document: see",
    "[Pages and browser routes](pages.md). The error shapes are explained in [Errors](errors.md).",
    "",
    "Each route's Security line names the document's security schemes:",
    "",
    ...Object.entries(doc.components?.securitySchemes ?? {}).map(
      ([name, scheme]) => `- \`${name}\`: ${cell(scheme.description)}`,
    ),
    "",
    "## Contents",
    "",
    ...tags.map((tag) => {
      const description = tagDescription(tag);
      return `- [${tag}](#${githubSlug(tag)})${description ? `: ${cell(description)}` : ""}`;
    }),
    "- [Webhook events](#webhook-events): the bodies POSTed to webhook endpoints.",
    "- [Schemas](#schemas): the records the routes answer with.",
    "",
  ];
  for (const tag of tags) {
    out.push(`## ${tag}`, "");
    const description = tagDescription(tag);
    if (description) out.push(description, "");
    for (const [method, path, operation] of byTag.get(tag) ?? [])
      out.push(...renderOperation(method, path, operation, doc, added.get(`${method} ${path}`)));
  }

  out.push("## Webhook events", "");
  out.push(
    "What the service POSTs to a webhook endpoint subscribed to each type ([Webhooks](../events/webhooks.md)).",
    "",
  );
  const components = doc.components?.schemas ?? {};
  for (const [name, operations] of Object.entries(doc.webhooks ?? {})) {
    for (const operation of Object.values(operations)) {
      out.push(`### \`${name}\``, "");
      if (operation.description) out.push(operation.description.trim(), "");
      const body = operation.requestBody?.content?.["application/json"]?.schema;
      const data = body?.properties?.data;
      if (data) out.push("`data` holds:", "", ...fieldsTable(data, components), "");
    }
  }

  out.push("## Schemas", "");
  for (const [name, schema] of Object.entries(components)) {
    out.push(`### ${name}`, "");
    if (schema.description) out.push(schema.description.trim(), "");
    const fields = fieldsTable(schema, components);
    out.push(...(fields.length > 0 ? fields : [typeOf(schema)]), "");
  }
  return `${out.join("\n").trimEnd()}\n`;
}

if (import.meta.main) {
  writeFileSync(ROUTES_FILE, await routesReference());
  console.log(`docs:routes: wrote ${ROUTES_FILE}`);
}
