// What the sign-in-by-mail tests share (issue 37): an app with sign-in by
// mail on and a real SMTP server (test/mail-server.ts), the request for a
// mail, the mail's link and code read from what the server received, the
// two grants, and an access token's claims.
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import type { FastifyInstance } from "fastify";
import type { Config } from "../src/config.ts";
import { MAIL_CODE_GRANT, MAIL_LINK_GRANT } from "../src/core/schemas.ts";
import { bearer, buildTestApp, requestToken, type TestApp, testConfig } from "./helpers.ts";
import type { MailServer, ReceivedMail } from "./mail-server.ts";
import { codeAt } from "./totp.ts";

export { MAIL_CODE_GRANT, MAIL_LINK_GRANT };

let counter = 0;
/** A unique address per test, so tests sharing the SMTP server read their own mail. */
export const address = (prefix = "mail") => `${prefix}${++counter}.${process.pid}@example.com`;

export async function mailSignInApp(
  t: TestContext,
  smtp: MailServer,
  overrides: Partial<Config> = {},
): Promise<TestApp> {
  const base = testConfig();
  return buildTestApp(t, {
    mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
    passwordlessMail: "both",
    ...overrides,
  });
}

export const askMail = (
  app: FastifyInstance,
  email: string,
  headers: Record<string, string> = {},
  remoteAddress?: string,
) =>
  app.inject({
    method: "POST",
    url: "/auth/mail-sign-in",
    payload: { email },
    headers,
    ...(remoteAddress ? { remoteAddress } : {}),
  });

/** Waits for `count` sign-in mails to `email` (other mails, such as security notices, left aside); oldest first. */
export async function signInMails(
  smtp: MailServer,
  email: string,
  count = 1,
  timeoutMs = 10_000,
): Promise<ReceivedMail[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const mails = smtp.messages.filter((mail) => mail.to.includes(email) && mail.text.includes("mail_sign_in="));
    if (mails.length >= count) return mails;
    if (Date.now() > deadline) throw new Error(`expected ${count} sign-in mails to ${email}, got ${mails.length}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The `name=value` of the binding cookie an answer set, for the next request's Cookie header. */
export function bindingOf(response: { headers: Record<string, unknown> }): string {
  const header = String(response.headers["set-cookie"]);
  const match = /^(uts_mail_sign_in=[\w-]{43});/.exec(header);
  assert.ok(match, header);
  return match[1] as string;
}

/** The link of a sign-in mail: its attempt (query) and token (fragment). */
export function linkOf(mail: ReceivedMail): { url: URL; attempt: string; token: string } {
  const match = /https?:\/\/\S+\?mail_sign_in=[\w-]+#token=[\w-]+/.exec(mail.text);
  assert.ok(match, mail.text);
  const url = new URL(match[0]);
  return {
    url,
    attempt: url.searchParams.get("mail_sign_in") as string,
    token: new URLSearchParams(url.hash.slice(1)).get("token") as string,
  };
}

export function codeOf(mail: ReceivedMail): string {
  const match = /: (\d{6})$/m.exec(mail.text);
  assert.ok(match, mail.text);
  return match[1] as string;
}

export const codeGrant = (app: FastifyInstance, attempt: string, code: string, headers: Record<string, string> = {}) =>
  requestToken(app, { grant_type: MAIL_CODE_GRANT, attempt, code }, headers);

export const linkGrant = (
  app: FastifyInstance,
  attempt: string,
  token: string,
  { cookie, confirm }: { cookie?: string; confirm?: boolean } = {},
) =>
  requestToken(
    app,
    { grant_type: MAIL_LINK_GRANT, attempt, token, ...(confirm ? { confirm: "true" } : {}) },
    cookie ? { cookie } : {},
  );

/** The payload of a JWT, unchecked. */
export function claimsOf(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split(".")[1] as string, "base64url").toString("utf8"));
}

/** Enrols and confirms an authenticator app for the holder of `token`; answers its secret. */
export async function enrolTotp(app: FastifyInstance, token: string, now: number): Promise<string> {
  const enrolment = await app.inject({ method: "POST", url: "/me/totp", headers: bearer(token) });
  assert.equal(enrolment.statusCode, 201, enrolment.body);
  const secret = enrolment.json().secret as string;
  const confirmed = await app.inject({
    method: "POST",
    url: "/me/totp/confirm",
    headers: bearer(token),
    payload: { code: codeAt(secret, now) },
  });
  assert.equal(confirmed.statusCode, 200, confirmed.body);
  return secret;
}
