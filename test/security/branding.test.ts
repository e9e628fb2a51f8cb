// Branding's refusals (issue 37): a logo that is not what it claims, too
// large, SVG (it can carry script) or not an image at all is refused (422, or
// 415 for a body not declared an image) and nothing is stored; the logo is
// served so that a browser cannot take it for anything else; what an admin
// sets is escaped on the pages; a dynamic registrant may colour its own pages
// only within the contrast rule; a page's application brand grants nothing.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MAX_LOGO_BYTES } from "../../src/branding/logo.ts";
import { admin, DEFAULT_BRANDING, GIF, png } from "../branding/fixture.ts";
import { bearer, buildTestApp } from "../helpers.ts";

const upload = (headers: Record<string, string>, type: string | undefined, body: Buffer | string) => ({
  method: "PUT" as const,
  url: "/branding/logo",
  headers: type === undefined ? headers : { ...headers, "content-type": type },
  payload: body,
});

describe("logo refusals", () => {
  for (const [name, type, body, status, detail] of [
    ["a PNG declared a JPEG", "image/jpeg", png(), 422, "The logo's bytes are not a JPEG image"],
    [
      "a text file declared a PNG",
      "image/png",
      Buffer.from("just some text, not an image at all"),
      422,
      "The logo's bytes are not a PNG image",
    ],
    ["a GIF declared a WebP", "image/webp", GIF, 422, "The logo's bytes are not a WEBP image"],
    [
      "300 KiB",
      "image/png",
      Buffer.concat([png(), Buffer.alloc(300 * 1024 - png().length)]),
      422,
      `The logo is 300 KiB; at most ${MAX_LOGO_BYTES / 1024} KiB is accepted`,
    ],
    [
      "an SVG",
      "image/svg+xml",
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
      422,
      "SVG logos are refused (an SVG can carry script): send a PNG, JPEG, WebP or GIF",
    ],
    [
      "another image type",
      "image/bmp",
      Buffer.from("BM0000"),
      422,
      "Logo type image/bmp is not accepted: send one of image/png, image/jpeg, image/webp, image/gif",
    ],
    ["an empty PNG", "image/png", Buffer.alloc(0), 422, "The logo is empty"],
    [
      "text",
      "text/plain",
      Buffer.from("hello"),
      415,
      "The logo must be sent as the raw image, with Content-Type image/png, image/jpeg, image/webp, image/gif",
    ],
    [
      "JSON",
      "application/json",
      Buffer.from('{"logo":"x"}'),
      415,
      "The logo must be sent as the raw image, with Content-Type image/png, image/jpeg, image/webp, image/gif",
    ],
  ] as const) {
    test(`${name}: ${status}, nothing stored`, async (t) => {
      const { app, store } = await buildTestApp(t);
      const headers = await admin(app, store);
      const answer = await app.inject(upload(headers, type, body));
      assert.equal(answer.statusCode, status, answer.body);
      assert.equal(answer.headers["content-type"], "application/json; charset=utf-8");
      assert.deepEqual(answer.json(), { detail });
      assert.equal(await store.findBrand("service"), undefined);
      assert.deepEqual((await app.inject({ method: "GET", url: "/branding", headers })).json(), DEFAULT_BRANDING);
    });
  }

  test("a client's logo follows the same rules; an unknown client is 404", async (t) => {
    const { app, store } = await buildTestApp(t);
    const headers = await admin(app, store);
    const unknown = await app.inject({
      method: "PUT",
      url: "/clients/0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f/logo",
      headers: { ...headers, "content-type": "image/png" },
      payload: png(),
    });
    assert.equal(unknown.statusCode, 404);
    assert.deepEqual(unknown.json(), { detail: "Client not found" });
    const created = await app.inject({
      method: "POST",
      url: "/clients",
      headers,
      payload: { client_name: "Partner", grant_types: ["client_credentials"] },
    });
    const id = created.json().client_id as string;
    const svg = await app.inject({
      method: "PUT",
      url: `/clients/${id}/logo`,
      headers: { ...headers, "content-type": "image/svg+xml" },
      payload: "<svg/>",
    });
    assert.equal(svg.statusCode, 422);
    assert.equal(await store.findBrand(id), undefined);
  });
});

describe("serving", () => {
  test("the logo is not sniffed, not framed, runs nothing; a name that is not a hash finds nothing", async (t) => {
    const { app, store } = await buildTestApp(t);
    const headers = await admin(app, store);
    const put = await app.inject(upload(headers, "image/png", png()));
    const url = put.json().logo_url as string;
    const served = await app.inject({ method: "GET", url });
    assert.equal(served.headers["x-content-type-options"], "nosniff");
    assert.equal(served.headers["content-security-policy"], "default-src 'none'; frame-ancestors 'none'; sandbox");
    assert.equal(served.headers["cross-origin-resource-policy"], "same-origin");
    for (const other of [
      url.replace(".png", ".gif"),
      url.replace(/\/[0-9a-f]{20}\./, "/../../etc/passwd."),
      "/branding/logo/x.png",
      `${url}x`,
    ]) {
      const answer = await app.inject({ method: "GET", url: other });
      assert.equal(answer.statusCode, 404, other);
    }
  });

  test("what an admin sets is escaped on every page; a colour cannot carry CSS", async (t) => {
    const { app, store } = await buildTestApp(t);
    const headers = await admin(app, store);
    const set = await app.inject({
      method: "PUT",
      url: "/branding",
      headers,
      payload: { product_name: '<img src=x onerror=alert(1)> "$&"', terms_url: 'https://acme.example/?a="><script>' },
    });
    assert.equal(set.statusCode, 200, set.body);
    const page = await app.inject({ method: "GET", url: "/sign-in" });
    assert.ok(
      page.body.includes('<span class="brand-name">&#60;img src=x onerror=alert(1)&#62; &#34;$&#38;&#34;</span>'),
      page.body,
    );
    assert.ok(page.body.includes('<a href="https://acme.example/?a=&#34;&#62;&#60;script&#62;">'));
    assert.ok(!page.body.includes("<img src=x"));
    const css = await app.inject({
      method: "PATCH",
      url: "/branding",
      headers,
      payload: { primary_color: "#000000; background: url(//evil.example)" },
    });
    assert.equal(css.statusCode, 422);
    const name = await app.inject({ method: "PATCH", url: "/branding", headers, payload: { product_name: "A\nB" } });
    assert.deepEqual(name.json(), {
      detail: "product_name must not contain control characters (line breaks included)",
    });
  });
});

describe("a dynamic registrant", () => {
  const TOKEN = "an-initial-access-token-of-32-bytes-or-more";
  const register = (payload: object) => ({
    method: "POST" as const,
    url: "/auth/register",
    headers: bearer(TOKEN),
    payload: { client_name: "Partner", redirect_uris: ["https://partner.example/cb"], ...payload },
  });

  test("may colour its own pages within the contrast rule, never with an unreadable colour", async (t) => {
    const { app } = await buildTestApp(t, {
      dynamicRegistration: {
        initialAccessToken: TOKEN,
        grantTypes: ["authorization_code", "refresh_token"],
        scopes: ["openid", "profile", "email"],
      },
    });
    const refused = await app.inject(register({ brand_color: "#eeeeee" }));
    assert.equal(refused.statusCode, 400);
    const detail = "brand_color #eeeeee on white text has contrast 1.1:1; WCAG AA needs at least 4.5:1";
    assert.deepEqual(refused.json(), { error: "invalid_client_metadata", error_description: detail, detail });
    const accepted = await app.inject(register({ brand_color: "#0F766E" }));
    assert.equal(accepted.statusCode, 201, accepted.body);
    assert.equal(accepted.json().brand_color, "#0f766e");
    // No logo by registration: RFC 7591's logo_uri is ignored (never fetched), and there is no other way.
    const withLogo = await app.inject(register({ logo_uri: "https://partner.example/logo.svg" }));
    assert.equal(withLogo.statusCode, 201);
    assert.equal(withLogo.json().logo_uri, undefined);
  });
});
