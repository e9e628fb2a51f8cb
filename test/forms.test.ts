// The form parser of the token, revocation, introspection and OpenID Connect
// endpoints: repeated fields refused, empty ones absent, and field names that
// are also names of Object.prototype's members kept as plain fields.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { HttpError } from "../src/errors.ts";
import { newFields, parseForm } from "../src/platform/forms.ts";

describe("form fields", () => {
  test("every name is an own field; no prototype member shows through, and nothing is polluted", () => {
    const fields = parseForm("__proto__=a&constructor=b&toString=c&token=d");
    assert.deepEqual(Object.entries(fields), [
      ["__proto__", "a"],
      ["constructor", "b"],
      ["toString", "c"],
      ["token", "d"],
    ]);
    const empty = newFields();
    for (const member of ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"])
      assert.equal(member in empty, false, member);
    assert.equal(({} as Record<string, unknown>).a, undefined);
    assert.equal(Object.getPrototypeOf({}), Object.prototype);
    assert.equal(JSON.stringify(parseForm("token=x&client_id=y")), '{"token":"x","client_id":"y"}');
  });

  test("a repeated field is refused, even when empty; an empty field is absent", () => {
    assert.throws(
      () => parseForm("scope=&scope=read"),
      (error: unknown) =>
        error instanceof HttpError && error.status === 400 && error.detail === "Form field 'scope' is repeated",
    );
    assert.deepEqual({ ...parseForm("username=&password=pw") }, { password: "pw" });
  });

  test("any body reads as URLSearchParams reads it (the hand-cut plain forms included)", () => {
    // The reference: what parseForm did with URLSearchParams alone, fields or the repeated field's error.
    const reference = (body: string): string => {
      const fields: [string, string][] = [];
      const seen = new Set<string>();
      for (const [name, value] of new URLSearchParams(body)) {
        if (seen.has(name)) return `repeated ${name.slice(0, 64)}`;
        seen.add(name);
        if (value !== "") fields.push([name, value]);
      }
      return JSON.stringify(fields);
    };
    const parsed = (body: string): string => {
      try {
        return JSON.stringify(Object.entries(parseForm(body)));
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        return `repeated ${/'(.*)'/s.exec(error.detail)?.[1]}`;
      }
    };
    const piece = fc.constantFrom("a", "b", "=", "&", "%", "+", "%41", "%zz", "é", "__proto__", "");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const body = pieces.join("");
        assert.equal(parsed(body), reference(body), body);
      }),
      { numRuns: 5000 },
    );
    for (const body of ["", "&", "=", "a", "a&a", "a=&a", "=a&=b", "a==b", "&&a=1&&"])
      assert.equal(parsed(body), reference(body), body);
  });
});
