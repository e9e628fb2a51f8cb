// The pages that are the same for every reader of a language (the sign-in page, the security page, the
// reset and verification pages) are kept as bytes per brand, with their Brotli and gzip forms (issue 37's
// benchmark): the answer is the same page whatever the encoding, chosen by Accept-Encoding's q-values.
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import type { Socket } from "node:net";
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

  test("over a real socket: the head and the page's bytes in one write, the same bytes in every encoding", async (t) => {
    const { app } = await buildTestApp(t);
    const base = await app.listen({ port: 0, host: "127.0.0.1" });
    // What each connection hands its socket: writes of one chunk, and writev's of several.
    const writes = { one: 0, several: 0 };
    app.server.on("connection", (socket: Socket) => {
      const counted = socket as unknown as Record<"_write" | "_writev", (...args: unknown[]) => unknown>;
      const [write, writev] = [counted._write, counted._writev];
      counted._write = (...args) => {
        writes.one++;
        return write.apply(socket, args);
      };
      counted._writev = (...args) => {
        writes.several++;
        return writev.apply(socket, args);
      };
    });
    const plain = (await app.inject({ url: "/sign-in", headers: { "accept-language": "de" } })).body;
    assert.ok(/[äöüß]/.test(plain), "the German page has bytes above ASCII");
    // Each answer as the socket delivered it: the whole of it, and the number of reads it took.
    const fetchRaw = (encoding: string) =>
      new Promise<{ head: string; body: Buffer }>((resolve, reject) => {
        const asked = httpRequest(`${base}/sign-in`, {
          headers: { "accept-language": "de", "accept-encoding": encoding, connection: "close" },
        });
        asked.on("response", (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () => resolve({ head: JSON.stringify(response.headers), body: Buffer.concat(chunks) }));
        });
        asked.on("error", reject);
        asked.end();
      });
    const br = await fetchRaw("gzip, deflate, br");
    assert.deepEqual(writes, { one: 1, several: 0 }, "the head and the body in one write");
    assert.equal(JSON.parse(br.head)["content-encoding"], "br");
    assert.equal(Number(JSON.parse(br.head)["content-length"]), br.body.length);
    assert.equal(brotliDecompressSync(br.body).toString(), plain);
    const gzip = await fetchRaw("gzip");
    assert.equal(gunzipSync(gzip.body).toString(), plain);
    const identity = await fetchRaw("identity");
    assert.equal(Number(JSON.parse(identity.head)["content-length"]), identity.body.length);
    assert.equal(identity.body.toString(), plain);
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
