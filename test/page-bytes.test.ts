// The pages that are the same for every reader of a language (the sign-in page, the security page, the
// reset and verification pages) are kept as bytes per brand, with their Brotli and gzip forms (issue 37's
// benchmark): the answer is the same page whatever the encoding, chosen by Accept-Encoding's q-values.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { acceptedEncoding } from "../src/pages/account-pages.ts";
import { admin } from "./branding/fixture.ts";
import { buildTestApp } from "./helpers.ts";

describe("kept pages' bytes", () => {
  test("the encoding by Accept-Encoding: Brotli first, then gzip, a q of 0 refuses", () => {
    assert.equal(acceptedEncoding("gzip, deflate, br, zstd"), "br");
    assert.equal(acceptedEncoding("gzip, deflate"), "gzip");
    assert.equal(acceptedEncoding("br;q=0, gzip;q=0.5"), "gzip");
    assert.equal(acceptedEncoding("br;q=0, gzip;q=0"), "identity");
    assert.equal(acceptedEncoding("deflate"), "identity");
    assert.equal(acceptedEncoding(undefined), "identity");
    assert.equal(acceptedEncoding("BR"), "br");
  });

  test("GET /sign-in: the same page as it is, in Brotli and in gzip; Vary says why", async (t) => {
    const { app } = await buildTestApp(t);
    const plain = await app.inject({ url: "/sign-in", headers: { "accept-language": "de" } });
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers["content-encoding"], undefined);
    assert.equal(plain.headers.vary, "accept-encoding");
    assert.match(plain.body, /^<!doctype html>\n<html lang="de" dir="ltr">/);
    assert.ok(plain.body.includes('<link rel="stylesheet" href="/branding/brand.css?v='), "the brand is filled");
    const br = await app.inject({
      url: "/sign-in",
      headers: { "accept-language": "de", "accept-encoding": "gzip, br" },
    });
    assert.equal(br.headers["content-encoding"], "br");
    assert.equal(br.headers["content-type"], "text/html; charset=utf-8");
    assert.equal(br.headers["content-security-policy"], plain.headers["content-security-policy"]);
    assert.equal(brotliDecompressSync(br.rawPayload).toString(), plain.body);
    assert.ok(br.rawPayload.length < plain.rawPayload.length / 2, "compressed");
    const gzip = await app.inject({ url: "/sign-in", headers: { "accept-language": "de", "accept-encoding": "gzip" } });
    assert.equal(gzip.headers["content-encoding"], "gzip");
    assert.equal(gunzipSync(gzip.rawPayload).toString(), plain.body);
  });

  test("a brand changed through the API shows at once on a kept page", async (t) => {
    const { app, store } = await buildTestApp(t);
    const before = await app.inject({ url: "/sign-in" });
    assert.ok(before.body.includes('<span class="brand-name">User service</span>'));
    const headers = await admin(app, store);
    const changed = await app.inject({
      method: "PATCH",
      url: "/branding",
      headers,
      payload: { product_name: "Acme Login" },
    });
    assert.equal(changed.statusCode, 200, changed.body);
    const after = await app.inject({ url: "/sign-in", headers: { "accept-encoding": "br" } });
    assert.ok(brotliDecompressSync(after.rawPayload).toString().includes('<span class="brand-name">Acme Login</span>'));
  });
});
