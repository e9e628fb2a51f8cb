// The embedded default, as an operator meets it: no mail settings at all, and
// every message lands as an .eml file in data/mail beside the database,
// readable by its owner only, with the link built from PUBLIC_URL.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { simpleParser } from "mailparser";
import { scratchDir, startService } from "./process.ts";

describe("mail on the embedded default", () => {
  test("sign-up writes the verification mail as an .eml file into data/mail", async (t) => {
    const cwd = scratchDir(t);
    const service = await startService(cwd, { PUBLIC_URL: "https://id.example.com" });
    t.after(() => service.stop());
    const response = await fetch(`${service.baseUrl}/users`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "ada@example.com", password: "correct horse battery" }),
    });
    assert.equal(response.status, 201);
    const folder = join(cwd, "data", "mail");
    const deadline = Date.now() + 10_000;
    let files: string[] = [];
    while (files.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      try {
        files = readdirSync(folder).filter((name) => name.endsWith(".eml"));
      } catch {}
    }
    assert.equal(files.length, 1, "one .eml file");
    const file = join(folder, files[0]!);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const eml = readFileSync(file, "utf8");
    assert.match(eml, /^To: ada@example\.com$/m);
    assert.match(eml, /^From: User service <no-reply@id\.example\.com>$/m);
    assert.match(eml, /^Message-ID: <[0-9a-f-]{36}@id\.example\.com>$/m);
    assert.match(eml, /^Subject: Verify your e-mail address$/m);
    const parsed = await simpleParser(eml);
    assert.match(parsed.text ?? "", /https:\/\/id\.example\.com\/verify-email#token=[\w-]{43}/);
    assert.match(
      typeof parsed.html === "string" ? parsed.html : "",
      /href="https:\/\/id\.example\.com\/verify-email#token=/,
    );
  });
});
