// The OpenAPI document tells the whole truth: every route is sent malformed,
// oversized and unauthenticated requests (and the malformed and oversized ones
// again with an admin's token), and each answer must be one the document
// lists for that operation, with a body that validates against the documented
// schema and every documented header present. The document itself declares
// WWW-Authenticate on every 401 and Retry-After on every 429 and 503.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { buildTestApp, createUser, loginToken } from "./helpers.ts";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface Response {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: object }>;
}
interface Operation {
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, Response>;
}

const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

describe("the OpenAPI document against the running service", () => {
  test("every answer to malformed, oversized and unauthenticated requests is documented, body and headers", async (t) => {
    const { app, store } = await buildTestApp(t);
    await store.create({
      email: "root@example.com",
      hashedPassword: (await createUser(store, "ada@example.com", "correct horse battery")).hashedPassword,
      isAdmin: true,
    });
    const admin = await loginToken(app, "root@example.com", "correct horse battery");
    const doc = (await app.inject({ method: "GET", url: "/openapi.json" })).json();
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    ajv.addSchema(doc, "openapi");

    let checked = 0;
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const url = path.replaceAll(/\{[^}]+\}/g, randomUUID());
        const type = Object.keys(operation.requestBody?.content ?? {})[0] ?? "application/json";
        const form = type === "application/x-www-form-urlencoded";
        const requests: Record<string, { headers: Record<string, string>; payload?: string }> = {
          unauthenticated: { headers: form ? {} : { "content-type": type }, payload: form ? undefined : "{}" },
          malformed: { headers: { "content-type": type }, payload: form ? "token=a&token=a" : '{"email": ' },
          oversized: {
            headers: { "content-type": type },
            payload: form ? `token=${"a".repeat(20_000)}` : JSON.stringify({ x: "a".repeat(20_000) }),
          },
        };
        for (const name of ["malformed", "oversized"]) {
          const request = requests[name] as { headers: Record<string, string>; payload?: string };
          requests[`${name} with an admin token`] = {
            ...request,
            headers: { ...request.headers, authorization: `Bearer ${admin}` },
          };
        }
        for (const [name, request] of Object.entries(requests)) {
          const where = `${method.toUpperCase()} ${path} ${name}`;
          const response = await app.inject({
            method: method.toUpperCase() as "GET",
            url,
            headers: request.headers,
            ...(request.payload === undefined ? {} : { payload: request.payload }),
          });
          const status = String(response.statusCode);
          const documented = operation.responses[status];
          assert.ok(documented, `${where}: ${status} is not documented (${response.body})`);
          assert.ok(response.statusCode < 500, `${where}: ${status}`);
          for (const header of Object.keys(documented.headers ?? {}))
            assert.ok(response.headers[header.toLowerCase()] !== undefined, `${where}: header ${header} is missing`);
          if (response.statusCode === 401) assert.equal(response.headers["www-authenticate"], "Bearer", where);
          const schema = documented.content?.["application/json"]?.schema;
          if (schema === undefined) {
            assert.equal(response.body, "", `${where}: documented without a body`);
            continue;
          }
          assert.match(String(response.headers["content-type"]), /^application\/json/, where);
          const validate = ajv.getSchema(
            `openapi#/${pointer("paths", path, method, "responses", status, "content", "application/json", "schema")}`,
          );
          assert.ok(validate, where);
          assert.ok(validate(response.json()), `${where}: ${JSON.stringify(validate.errors)} in ${response.body}`);
          checked += 1;
        }
      }
    }
    assert.ok(checked >= 90, `checked ${checked} answers`);
  });

  test("declares WWW-Authenticate on every 401 and Retry-After on every 429 and 503", async (t) => {
    const { app } = await buildTestApp(t);
    const doc = (await app.inject({ method: "GET", url: "/openapi.json" })).json();
    let seen = 0;
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const [status, header] of [
          ["401", "WWW-Authenticate"],
          ["429", "Retry-After"],
          ["503", "Retry-After"],
        ] as const) {
          const response = operation.responses[status];
          if (!response) continue;
          seen += 1;
          assert.ok(response.headers?.[header], `${method} ${path} ${status} declares ${header}`);
        }
      }
    }
    assert.ok(seen > 20);
  });
});
