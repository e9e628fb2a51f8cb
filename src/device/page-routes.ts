// The /device page (RFC 8628 section 3.3), where a person approves a device:
// signed in first, by the hosted sign-in page with everything it offers
// (password, second factor, passkey, upstream providers), which comes back
// here with the browser session's cookie (oidc/browser-session.ts). Then
// the code (pre-filled from verification_uri_complete's ?user_code=), read
// case- and dash-insensitively; the app's name, the scopes and the code to
// compare with the device's screen; Approve or Deny; "you may close this
// window". Each form carries a token bound to the browser session (and the
// decision's to the code), so no other site can post them. Wrong codes are
// counted per browser session and per address in the shared rate-limit
// counters (Redis when configured): the sixth within a minute is refused.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { CounterStore } from "../auth/rate-limits.ts";
import type { BrowserSession, BrowserSessions } from "../oidc/browser-session.ts";
import type { ClientRegistry } from "../oidc/clients.ts";
import { SIGN_IN_PAGE_PATH } from "../pages/security-pages.ts";
import type { Audit } from "../platform/audit.ts";
import { acceptFormBodies } from "../platform/forms.ts";
import type { UserStore } from "../store/store.ts";
import { displayUserCode, hashUserCode, normalizeUserCode } from "./codes.ts";
import { DEVICE_AUDIT } from "./grant.ts";
import { sendCodeEntryPage, sendConfirmPage, sendDeviceErrorPage, sendDonePage } from "./pages.ts";
import { DEVICE_DECISION_PATH, DEVICE_PAGE_PATH } from "./paths.ts";

export interface DevicePageOptions {
  store: UserStore;
  clients: ClientRegistry;
  browserSessions: BrowserSessions;
  counters: CounterStore;
  audit: Audit;
  clock: () => number;
}

/** Wrong codes a browser, and an address, may enter per window. */
export const WRONG_CODES_PER_WINDOW = 5;
export const WRONG_CODE_WINDOW_MS = 60_000;
/** What the pages say (catalogue keys: the English words are in catalogues/pages/en.json). */
export const WRONG_CODE = { key: "pages.device.wrongCode" } as const;
export const TOO_MANY_WRONG_CODES = { key: "pages.device.tooManyCodes" } as const;
export const FORM_EXPIRED = { key: "pages.device.formExpired" } as const;
export const CODE_GONE = { key: "pages.device.codeGone" } as const;

const DEVICE_PAGE = { observed: "device_verification" } as const;

export const devicePageRoutes: FastifyPluginAsync<DevicePageOptions> = async (
  app,
  { store, clients, browserSessions, counters, audit, clock },
) => {
  acceptFormBodies(app);
  const iso = () => new Date(clock()).toISOString();

  /** To the sign-in page, which comes back to this page (with the code typed so far). */
  function toSignIn(reply: FastifyReply, userCode: string | undefined) {
    const back =
      userCode === undefined ? DEVICE_PAGE_PATH : `${DEVICE_PAGE_PATH}?${new URLSearchParams({ user_code: userCode })}`;
    reply.request.actionOutcome = "sign_in";
    return reply.redirect(`${SIGN_IN_PAGE_PATH}?${new URLSearchParams({ continue: back })}`, 303);
  }

  const entryToken = (browser: BrowserSession) => browserSessions.formToken(browser.session.id, "device");
  const decisionScope = (browser: BrowserSession, userCodeHash: string) => `${browser.session.id}:${userCodeHash}`;
  const limitKeys = (browser: BrowserSession, request: FastifyRequest) => [
    `device:browser:${browser.session.id}`,
    `device:address:${request.ip}`,
  ];

  /** The limit's refusal when this browser or address has entered too many wrong codes this minute. */
  async function overLimit(browser: BrowserSession, request: FastifyRequest): Promise<number | undefined> {
    for (const key of limitKeys(browser, request)) {
      const counter = await counters.get(key);
      if (counter !== undefined && counter.count >= WRONG_CODES_PER_WINDOW) return counter.resetAt;
    }
    return undefined;
  }

  const field = (body: unknown, name: string) => {
    const value = (body as Record<string, unknown> | undefined)?.[name];
    return typeof value === "string" ? value : undefined;
  };

  app.get(DEVICE_PAGE_PATH, { schema: { hide: true }, config: DEVICE_PAGE }, async function devicePage(request, reply) {
    const raw = (request.query as Record<string, unknown>).user_code;
    const typed = typeof raw === "string" ? raw.slice(0, 64) : undefined;
    const browser = await browserSessions.read(request);
    if (browser === undefined) return toSignIn(reply, typed);
    request.actionOutcome = "entry_page";
    return sendCodeEntryPage(reply, {
      email: browser.user.email,
      formToken: entryToken(browser),
      userCode: typed ?? "",
    });
  });

  app.post(DEVICE_PAGE_PATH, { schema: { hide: true }, config: DEVICE_PAGE }, async function enterCode(request, reply) {
    const typed = (field(request.body, "user_code") ?? "").slice(0, 64);
    const browser = await browserSessions.read(request);
    if (browser === undefined) return toSignIn(reply, typed === "" ? undefined : typed);
    if (!browserSessions.checkFormToken(browser.session.id, "device", field(request.body, "form_token"))) {
      request.actionOutcome = "expired_form";
      return sendDeviceErrorPage(reply, 400, FORM_EXPIRED);
    }
    const resetAt = await overLimit(browser, request);
    if (resetAt !== undefined) {
      request.actionOutcome = "rate_limited";
      await audit.record(DEVICE_AUDIT, browser.user.id, "refused:too_many_codes", request.ip);
      reply.header("retry-after", String(Math.max(1, Math.ceil((resetAt - clock()) / 1000))));
      return sendDeviceErrorPage(reply, 429, TOO_MANY_WRONG_CODES);
    }
    const code = normalizeUserCode(typed);
    const found =
      code === undefined ? undefined : await store.findPendingDeviceAuthorization(hashUserCode(code), iso());
    const client = found === undefined ? undefined : await clients.find(found.clientId);
    if (code === undefined || found === undefined || client === undefined) {
      for (const key of limitKeys(browser, request)) await counters.increment(key, WRONG_CODE_WINDOW_MS);
      await audit.record(DEVICE_AUDIT, browser.user.id, "refused:wrong_code", request.ip);
      request.actionOutcome = "wrong_code";
      reply.code(400);
      return sendCodeEntryPage(reply, {
        email: browser.user.email,
        formToken: entryToken(browser),
        userCode: typed,
        problem: WRONG_CODE,
      });
    }
    request.actionOutcome = "confirm_page";
    return sendConfirmPage(reply, {
      clientName: client.name,
      scopes: found.scope.split(" ").filter((scope) => scope !== ""),
      email: browser.user.email,
      displayCode: displayUserCode(code),
      userCode: code,
      formToken: browserSessions.formToken(decisionScope(browser, found.userCodeHash), "device_decision"),
    });
  });

  app.post(
    DEVICE_DECISION_PATH,
    { schema: { hide: true }, config: DEVICE_PAGE },
    async function decide(request, reply) {
      const browser = await browserSessions.read(request);
      if (browser === undefined) return toSignIn(reply, undefined);
      const code = normalizeUserCode(field(request.body, "user_code") ?? "");
      const userCodeHash = code === undefined ? "" : hashUserCode(code);
      const token = field(request.body, "form_token");
      if (
        code === undefined ||
        !browserSessions.checkFormToken(decisionScope(browser, userCodeHash), "device_decision", token)
      ) {
        request.actionOutcome = "expired_form";
        return sendDeviceErrorPage(reply, 400, FORM_EXPIRED);
      }
      const approved = field(request.body, "decision") === "approve";
      const at = iso();
      const decided = await store.decideDeviceAuthorization(
        userCodeHash,
        { status: approved ? "approved" : "denied", userId: browser.user.id, browserSessionId: browser.session.id, at },
        at,
      );
      if (decided === undefined) {
        request.actionOutcome = "code_gone";
        return sendDeviceErrorPage(reply, 400, CODE_GONE);
      }
      if (approved) {
        // The approval is the person's consent: the app is listed under their apps, where they can take it back.
        const client = await clients.find(decided.clientId);
        if (client !== undefined && !client.firstParty) {
          const earlier = await store.findConsent(browser.user.id, client.id);
          const scopes = new Set([...(earlier?.scope.split(" ") ?? []), ...decided.scope.split(" ")]);
          scopes.delete("");
          await store.grantConsent(browser.user.id, client.id, [...scopes].join(" "), at);
        }
      }
      await audit.record(DEVICE_AUDIT, browser.user.id, approved ? "approved" : "denied", request.ip);
      request.actionOutcome = approved ? "approved" : "denied";
      return sendDonePage(reply, approved);
    },
  );
};
