// The one Cookie-header reader (src/platform/cookies.ts) that the browser
// session, the device cookie, the language and the mail and upstream bindings
// all use: exact names only, values whole, and a long header from a domain
// full of other apps' cookies still read.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { cookieValue } from "../src/platform/cookies.ts";

describe("reading a cookie from the Cookie header", () => {
  test("finds the named cookie among others, trimmed, with its value whole", () => {
    assert.equal(cookieValue("a=1; lang=de; b=2", "lang"), "de");
    assert.equal(cookieValue("  lang = fr ;x=y", "lang"), "fr");
    assert.equal(cookieValue("session=abc.def==; lang=en", "session"), "abc.def==");
    assert.equal(cookieValue("lang=", "lang"), "");
  });

  test("matches the whole name only, the first of two, and nothing without a header", () => {
    assert.equal(cookieValue("xlang=de; langx=fr", "lang"), undefined);
    assert.equal(cookieValue("lang=de; lang=fr", "lang"), "de");
    assert.equal(cookieValue("=de; lang", "lang"), undefined);
    assert.equal(cookieValue("", "lang"), undefined);
    assert.equal(cookieValue(undefined, "lang"), undefined);
  });

  test("reads a header of 12 KB (other apps' cookies on a shared domain)", () => {
    const others = Array.from({ length: 120 }, (_, i) => `app${i}=${"v".repeat(95)}`).join("; ");
    const header = `${others}; __Host-uts_session=the-session`;
    assert.ok(header.length > 12_000);
    assert.equal(cookieValue(header, "__Host-uts_session"), "the-session");
  });
});
