// The form parser of the token, revocation, introspection and OpenID Connect
// endpoints: repeated fields refused, empty ones absent, and field names that
// are also names of Object.prototype's members kept as plain fields.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
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
});
