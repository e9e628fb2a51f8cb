// Date-times that pass for RFC 3339 but that Date cannot hold (issue 32,
// defect 16): a leap second, an offset without minutes, years the databases
// do not store. Every query parameter and body field of format `date-time`
// that the OpenAPI document lists, on an app with every optional capability
// on (so a new route is walked without editing this test), is sent each edge
// case with an admin's token: the unrepresentable ones are refused with 422
// and the format's message, the others are taken; never a 5xx. Both backends
// (TEST_BACKEND=postgres): year 0 was a PostgreSQL-only failure.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { DEFAULT_DYNAMIC_GRANT_TYPES, DEFAULT_DYNAMIC_SCOPES } from "../../src/oidc/registration-policy.ts";
import { buildTestApp, loginToken, passwords } from "../helpers.ts";
import { OIDC_KEY } from "../oidc/fixture.ts";

/** Refused: 422 `must match format "date-time"`. */
const UNREPRESENTABLE = [
  "2016-12-31T23:59:60Z", // a real leap second
  "9999-12-31T23:59:60Z", // a leap second in the last year
  "1990-12-31T15:59:60-08:00", // a real leap second, with an offset
  "2016-12-31T23:59:59+05", // an offset without minutes: RFC 3339 wants them, Date refuses it
  "0000-01-01T00:00:00Z", // year 0: Date holds it, PostgreSQL does not
  "0001-01-01T00:00:00+00:01", // before year 1 in UTC
  "9999-12-31T23:59:59-00:01", // after year 9999 in UTC
  "2016-12-31T24:00:00Z", // hour 24
  "2016-13-01T00:00:00Z", // month 13
  "2016-04-31T00:00:00Z", // 31 April
  "2015-02-29T00:00:00Z", // 29 February of a common year
  "2016-12-31T23:59:59+24:00", // offset out of range
  "+275760-09-13T00:00:00Z", // an expanded year
  "275760-09-13T00:00:00Z", // a huge year
  "99999-01-01T00:00:00Z",
  "2016-12-31T23:59:59", // no offset
  "2016-12-31", // a date alone
  "1483228800", // seconds since the epoch
];

/** Taken: RFC 3339 and within years 1 to 9999 in UTC. */
const REPRESENTABLE = [
  "2016-12-31T23:59:59Z",
  "2016-12-31T23:59:59.999999999Z",
  "2016-12-31t23:59:59z",
  "2016-12-31T23:59:59+05:30",
  "2016-02-29T12:00:00-08:00",
  "0001-01-01T00:00:00Z",
  "9999-12-31T23:59:59.999Z",
];

type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string;
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
};
interface Parameter {
  in: string;
  name: string;
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}

/** The places a date-time can be sent: a query parameter, or a body field (its path of property names). */
type Place = { in: "query"; name: string } | { in: "body"; type: string; path: string[]; root: Schema };

describe("date-time parameters and fields", () => {
  test("every date-time in the OpenAPI document refuses what Date cannot represent with 422, never a 5xx", async (t) => {
    const { app, store } = await buildTestApp(t, {
      oidcSigningKeys: [OIDC_KEY],
      dynamicRegistration: {
        initialAccessToken: "initial-access-token-of-the-date-time-test",
        grantTypes: DEFAULT_DYNAMIC_GRANT_TYPES,
        scopes: DEFAULT_DYNAMIC_SCOPES,
      },
      upstream: {
        providers: [
          {
            kind: "oidc",
            name: "corp",
            label: "Corp",
            issuer: "http://localhost:9",
            clientId: "client",
            clientSecret: "secret",
            scopes: "openid email",
            allowedDomains: [],
          },
        ],
        autoLink: false,
        keepTokens: false,
        timeoutMs: 1000,
      },
    });
    const admin = await store.create({
      email: "root@example.com",
      hashedPassword: await passwords.hash("correct horse battery"),
      isAdmin: true,
    });
    const token = await loginToken(app, "root@example.com", "correct horse battery");
    const doc = (await app.inject({ method: "GET", url: "/openapi.json" })).json();

    const resolve = (schema: Schema): Schema => {
      let at = schema;
      while (at.$ref !== undefined) {
        const target = at.$ref
          .replace(/^#\//, "")
          .split("/")
          .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], doc);
        at = target as Schema;
      }
      return at;
    };
    const isDateTime = (schema: Schema): boolean => {
      const at = resolve(schema);
      return at.format === "date-time" || [...(at.anyOf ?? []), ...(at.oneOf ?? [])].some(isDateTime);
    };
    /** Paths to every date-time property under `schema` (through objects, arrays and unions). */
    const dateTimesIn = (schema: Schema, path: string[] = []): string[][] => {
      const at = resolve(schema);
      if (isDateTime(at)) return [path];
      const found: string[][] = [];
      for (const [name, property] of Object.entries(at.properties ?? {}))
        found.push(...dateTimesIn(property, [...path, name]));
      if (at.items) found.push(...dateTimesIn(at.items, [...path, "0"]));
      for (const branch of [...(at.anyOf ?? []), ...(at.oneOf ?? []), ...(at.allOf ?? [])])
        found.push(...dateTimesIn(branch, path));
      return found;
    };
    /** A value the schema takes, as far as a generic guess goes: its default, an example, or the least one. */
    const sample = (schema: Schema): unknown => {
      const at = resolve(schema);
      for (const key of ["default", "const", "example"]) if (at[key] !== undefined) return at[key];
      if (Array.isArray(at.examples) && at.examples.length > 0) return at.examples[0];
      if (Array.isArray(at.enum)) return at.enum[0];
      const branch = at.anyOf?.[0] ?? at.oneOf?.[0];
      if (branch) return sample(branch);
      if (at.allOf) return Object.assign({}, ...at.allOf.map(sample));
      switch (at.type) {
        case "object":
          return Object.fromEntries((at.required ?? []).map((name) => [name, sample(at.properties?.[name] ?? {})]));
        case "array":
          return Array.from({ length: Number(at.minItems ?? 0) }, () => sample(at.items ?? {}));
        case "integer":
        case "number":
          return Number(at.minimum ?? 1);
        case "boolean":
          return false;
        case "string": {
          const byFormat: Record<string, string> = {
            "date-time": "2020-01-01T00:00:00Z",
            uuid: randomUUID(),
            email: "someone@example.com",
            uri: "https://example.com/",
          };
          return byFormat[String(at.format)] ?? "x".repeat(Number(at.minLength ?? 1));
        }
        default:
          return null;
      }
    };

    const places: { method: string; path: string; place: Place }[] = [];
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const parameter of operation.parameters ?? [])
          if (parameter.in === "query" && parameter.schema && isDateTime(parameter.schema))
            places.push({ method, path, place: { in: "query", name: parameter.name } });
        for (const [type, { schema }] of Object.entries(operation.requestBody?.content ?? {}))
          for (const fieldPath of dateTimesIn(schema))
            places.push({ method, path, place: { in: "body", type, path: fieldPath, root: schema } });
      }
    }
    const named = places.map(({ method, path, place }) =>
      place.in === "query" ? `${method} ${path} ?${place.name}` : `${method} ${path} body.${place.path.join(".")}`,
    );
    // Not a vacuous walk: the audit trail's filters are found (and whatever else there is).
    assert.ok(named.includes("get /users/{id}/events ?from"), named.join(", "));
    assert.ok(named.includes("get /users/{id}/events ?to"), named.join(", "));

    const failures: string[] = [];
    for (const [i, { method, path, place }] of places.entries()) {
      const url = path.replaceAll(/\{([^}]+)\}/g, (_, name) => (name === "id" ? admin.id : randomUUID()));
      for (const value of [...UNREPRESENTABLE, ...REPRESENTABLE]) {
        let request: { url: string; headers: Record<string, string>; payload?: string };
        let field: string;
        if (place.in === "query") {
          request = { url: `${url}?${new URLSearchParams({ [place.name]: value })}`, headers: {} };
          field = `querystring.${place.name}`;
        } else {
          const body = sample(place.root) as Record<string, unknown>;
          let at: Record<string, unknown> = body;
          for (const key of place.path.slice(0, -1)) {
            at[key] ??= /^\d+$/.test(key) ? [] : {};
            at = at[key] as Record<string, unknown>;
          }
          at[place.path.at(-1) as string] = value;
          const form = place.type === "application/x-www-form-urlencoded";
          request = {
            url,
            headers: { "content-type": place.type },
            payload: form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body),
          };
          field = `body.${place.path.join(".")}`;
        }
        const response = await app.inject({
          method: method.toUpperCase() as "GET",
          ...request,
          headers: { ...request.headers, authorization: `Bearer ${token}` },
        });
        const where = `${named[i]} = ${value}: ${response.statusCode} ${response.body}`;
        const refusal = { detail: `${field}: must match format "date-time"` };
        if (response.statusCode >= 500) failures.push(where);
        else if (UNREPRESENTABLE.includes(value)) {
          if (response.statusCode !== 422 || JSON.stringify(response.json()) !== JSON.stringify(refusal))
            failures.push(`${where} (expected 422 ${JSON.stringify(refusal)})`);
        } else if (response.statusCode === 422 && response.json().detail === refusal.detail) failures.push(where);
      }
    }
    assert.deepEqual(failures, []);

    // The filters still work at the edges they take: from the last second of 2016 to the end of year 9999
    // holds the admin's login; up to that last second holds nothing.
    const events = async (query: string) => {
      const response = await app.inject({
        method: "GET",
        url: `/users/${admin.id}/events?${query}`,
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(response.statusCode, 200, response.body);
      return (response.json().items as { type: string }[]).map((event) => event.type);
    };
    assert.deepEqual(await events("from=2016-12-31T23:59:59Z&to=9999-12-31T23:59:59.999Z"), ["login"]);
    assert.deepEqual(await events("from=0001-01-01T00:00:00Z&to=2016-12-31T23:59:59Z"), []);
  });
});
