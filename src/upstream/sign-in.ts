// Sign-in with an upstream provider (issue 25), the service's side: the
// pending sign-in kept in the database (one use, ten minutes, bound to the
// browser by a cookie, so the callback may reach any instance), the account
// an identity belongs to (keyed by issuer and subject, never by e-mail), and
// the one-use tickets that hand the result to the sign-in page, which then
// asks the token endpoint for tokens like after a password (second factor
// included) and opens the browser session of the authorization endpoint.
// Nothing is written before the provider's answer has been checked. An
// account found by e-mail is proved before it is linked: by signing in to it
// (password, passkey), or by a link mailed to its address that works once,
// for ten minutes, in the browser that started the sign-in. Accounts created
// through a provider count against the sign-up rate limit of POST /users.
// Whether an account may be linked without that proof, and what the mailed
// link ends on an account whose address was never verified, is the one rule
// of auth/address-proof.ts (account pre-hijacking).

import { createHash, randomBytes } from "node:crypto";
import { endedEvents, mailedLinkPlan, mayLinkAutomatically } from "../auth/address-proof.ts";
import type { RateLimits } from "../auth/rate-limits.ts";
import { CredentialsChanged, HttpError } from "../errors.ts";
import type { Locale } from "../i18n/locales.ts";
import type { AccountMails } from "../mail/messages.ts";
import { createSealer } from "../mail/seal.ts";
import type { Audit } from "../platform/audit.ts";
import { newId } from "../store/ids.ts";
import type {
  SignedInAs,
  UpstreamIdentityRecord,
  UpstreamPendingRecord,
  UpstreamTicketRecord,
  UserRecord,
  UserStore,
} from "../store/store.ts";
import { type Assertion, newPending, type RelyingParty, relyingParty, UpstreamFailure } from "./relying-party.ts";
import type { UpstreamConfig } from "./settings.ts";

export const PENDING_SECONDS = 600;
export const TICKET_SECONDS = 120;
/** How long a mailed link works (the binding cookie is set again for as long when it is mailed). */
export const LINK_MAIL_SECONDS = 600;
const SEAL_INFO = "upstream-token-seal";

export const NO_PENDING_SIGN_IN =
  "This sign-in has expired or was already used, or was started in another browser. Start again.";
export const DOMAIN_NOT_ALLOWED = "Accounts of this e-mail domain cannot sign in here.";
export const NO_EMAIL =
  "The provider did not give a verified e-mail address for this account. Verify one there, then try again.";
export const SIGNUP_CLOSED = "There is no account for this sign-in, and sign-up is closed. Ask an administrator.";
export const NOT_VERIFIED = "The provider does not say this e-mail address is verified, which this service requires.";
export const LINKED_ELSEWHERE = "This sign-in is already linked to another account.";
export const ACCOUNT_INACTIVE = "This account cannot sign in.";

export const hashOf = (text: string) => createHash("sha256").update(text).digest("base64url");
const random = () => randomBytes(32).toString("base64url");

/** Where the callback sends the browser. */
export type CallbackOutcome =
  | { kind: "signed_in"; ticket: string; continueTo: string | null }
  | { kind: "prove_account"; ticket: string; continueTo: string | null }
  | { kind: "linked" }
  | { kind: "refused"; status: number; detail: string; headers?: Record<string, string> };

export interface Upstream {
  readonly parties: ReadonlyMap<string, RelyingParty>;
  /** The provider's address with a new pending sign-in, and the browser binding to set as a cookie. */
  start(
    provider: string,
    options: { continueTo: string | null; linkUserId: string | null },
  ): Promise<{ location: string; binding: string }>;
  callback(provider: string, callback: URL, binding: string | undefined, ip: string): Promise<CallbackOutcome>;
  /** The user of a sign-in ticket (spent now); undefined when unknown, spent, expired or from another browser. */
  redeemSignIn(ticket: string, binding: string | undefined): Promise<UserRecord | undefined>;
  /** Links the identity of a link ticket to the user who has just proved the account. */
  completeLink(
    ticket: string,
    binding: string | undefined,
    user: UserRecord,
    ip: string,
  ): Promise<"linked" | "invalid" | "elsewhere">;
  /**
   * Spends a link ticket and mails a link to the account's address instead of asking its password;
   * "invalid" when the ticket is unknown, spent, expired or from another browser. Throws 429 past the
   * mail-request limit of the reset and verification mails.
   */
  mailLink(
    ticket: string,
    binding: string | undefined,
    continueTo: string | null,
    ip: string,
    /** The language the request asked for: the mail's, unless the account chose one. */
    asked?: Locale,
  ): Promise<"sent" | "invalid">;
  /**
   * Links the identity of a mailed link (spent now) and answers a sign-in ticket for it, bound to the
   * same browser, with the authorization request to go back to.
   */
  confirmMailedLink(
    token: string,
    binding: string | undefined,
    ip: string,
  ): Promise<{ ticket: string; continueTo: string | null } | "invalid" | "elsewhere">;
  /** Whether the user keeps another way to sign in without this identity. */
  mayUnlink(user: UserRecord, identityId: string): Promise<boolean>;
}

export interface UpstreamOptions {
  config: UpstreamConfig;
  store: UserStore;
  audit: Audit;
  /** MFA_ENCRYPTION_KEY, which seals kept tokens. */
  sealKeys: readonly string[];
  signupOpen: boolean;
  /** The sign-up limit (per client address) and the mail-request limit, shared with the rest of the service. */
  limits: Pick<RateLimits, "countSignup" | "countMailRequest">;
  mails: Pick<AccountMails, "upstreamLink">;
  /** Wakes the mail sender after a mail is queued. */
  wakeMail: () => void;
  verificationRequired: boolean;
  redirectUri: (provider: string) => string;
  clock: () => number;
  onFailure: (provider: string, error: unknown) => void;
}

export function createUpstream(options: UpstreamOptions): Upstream {
  const { config, store, audit, clock } = options;
  const parties = new Map(config.providers.map((p) => [p.name, relyingParty(p, config.timeoutMs)]));
  const sealer = config.keepTokens ? createSealer(options.sealKeys, SEAL_INFO) : undefined;
  const iso = (offsetSeconds = 0) => new Date(clock() + offsetSeconds * 1000).toISOString();
  const seal = (assertion: Assertion) => (sealer ? sealer.seal(JSON.stringify(assertion.tokens)) : null);

  async function ticketFor(
    kind: UpstreamTicketRecord["kind"],
    bindingHash: string,
    party: RelyingParty,
    assertion: { issuer: string; subject: string; email: string | null },
    userId: string | null,
    sealedTokens: string | null,
  ): Promise<string> {
    const ticket = random();
    await store.saveUpstreamTicket({
      ticketHash: hashOf(ticket),
      kind,
      bindingHash,
      userId,
      provider: party.provider.name,
      issuer: assertion.issuer,
      subject: assertion.subject,
      email: assertion.email,
      sealedTokens,
      createdAt: iso(),
      expiresAt: iso(TICKET_SECONDS),
    });
    return ticket;
  }

  /** `signedIn`: the sign-in of a user linking for himself, which must still be live (store/sql/signed-in.ts). */
  function link(
    userId: string,
    party: RelyingParty,
    a: { issuer: string; subject: string; email: string | null },
    sealedTokens: string | null,
    signedIn?: SignedInAs,
  ) {
    const identity = {
      id: newId(clock()),
      userId,
      provider: party.provider.name,
      issuer: a.issuer,
      subject: a.subject,
      email: a.email,
      sealedTokens,
      createdAt: iso(),
    };
    return store.linkIdentity(identity, signedIn);
  }

  /** The account of a checked assertion: found, created, linked, or to be proved first. */
  async function resolve(
    party: RelyingParty,
    assertion: Assertion,
    pending: Pick<UpstreamPendingRecord, "bindingHash" | "continueTo" | "linkUserId" | "createdAt">,
    ip: string,
  ): Promise<CallbackOutcome> {
    const provider = party.provider.name;
    const refuse = async (status: number, detail: string, outcome: string, userId: string | null = null) => {
      await audit.record("upstream", userId, `${outcome}:${provider}`, ip);
      return { kind: "refused" as const, status, detail };
    };
    const domain = assertion.email?.split("@").pop()?.toLowerCase();
    const allowed = party.provider.allowedDomains;
    if (allowed.length > 0 && !(assertion.emailVerified && domain !== undefined && allowed.includes(domain)))
      return refuse(403, DOMAIN_NOT_ALLOWED, "refused_domain");
    const known = await store.findIdentity(assertion.issuer, assertion.subject);
    if (pending.linkUserId !== null) {
      if (known && known.userId !== pending.linkUserId)
        return refuse(409, LINKED_ELSEWHERE, "link_refused", pending.linkUserId);
      try {
        // Only while no ending of every session (a proof of the address, a reset) came since the start.
        const signedIn = { unchangedSince: pending.createdAt };
        if (!known) await link(pending.linkUserId, party, assertion, seal(assertion), signedIn);
      } catch (error) {
        if (!(error instanceof CredentialsChanged)) throw error;
        return refuse(400, NO_PENDING_SIGN_IN, "link_refused", pending.linkUserId);
      }
      await audit.record("upstream", pending.linkUserId, `linked:${provider}`, ip);
      return { kind: "linked" };
    }
    if (known) {
      const user = await store.findById(known.userId);
      if (!user?.isActive) return refuse(403, ACCOUNT_INACTIVE, "refused_inactive", known.userId);
      await store.touchIdentity(known.id, assertion.email, seal(assertion), iso());
      const ticket = await ticketFor("sign_in", pending.bindingHash, party, assertion, user.id, null);
      return { kind: "signed_in", ticket, continueTo: pending.continueTo };
    }
    if (assertion.email === null) return refuse(400, NO_EMAIL, "refused_no_email");
    const existing = await store.findByEmail(assertion.email);
    if (existing) {
      if (mayLinkAutomatically(config.autoLink, existing, assertion.emailVerified)) {
        const linked = await link(existing.id, party, assertion, seal(assertion));
        if (!linked) return refuse(409, LINKED_ELSEWHERE, "link_refused", existing.id);
        await audit.record("upstream", existing.id, `linked_automatically:${provider}`, ip);
        const ticket = await ticketFor("sign_in", pending.bindingHash, party, assertion, existing.id, null);
        return { kind: "signed_in", ticket, continueTo: pending.continueTo };
      }
      // Nothing is linked before the account's owner proves it (signs in to it, or opens the link mailed to
      // it): an address that was never verified may have been signed up with by someone else.
      const ticket = await ticketFor("link", pending.bindingHash, party, assertion, null, seal(assertion));
      return { kind: "prove_account", ticket, continueTo: pending.continueTo };
    }
    if (!options.signupOpen) return refuse(403, SIGNUP_CLOSED, "refused_signup_closed");
    if (options.verificationRequired && !assertion.emailVerified)
      return refuse(403, NOT_VERIFIED, "refused_unverified");
    try {
      await options.limits.countSignup(ip);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      await audit.record("upstream", null, `refused_rate_limited:${provider}`, ip);
      return { kind: "refused", status: error.status, detail: error.detail, headers: error.headers };
    }
    // No password ("" matches none): the account signs in through its identities, or sets one by a reset.
    const user = await store.create(
      {
        email: assertion.email,
        hashedPassword: "",
        fullName: assertion.name?.slice(0, 200) ?? null,
        emailVerifiedAt: assertion.emailVerified ? iso() : null,
      },
      { events: [{ type: "signup", outcome: `upstream:${provider}`, clientAddress: ip }] },
    );
    if (!(await link(user.id, party, assertion, seal(assertion)))) {
      await store.remove(user.id); // another callback linked this identity at the same moment
      return refuse(409, LINKED_ELSEWHERE, "link_refused");
    }
    const ticket = await ticketFor("sign_in", pending.bindingHash, party, assertion, user.id, null);
    return { kind: "signed_in", ticket, continueTo: pending.continueTo };
  }

  return {
    parties,
    async start(provider, { continueTo, linkUserId }) {
      const party = parties.get(provider);
      if (!party) throw new UpstreamFailure("There is no such sign-in provider.");
      const pending = newPending();
      const binding = random();
      const location = await party.authorizationUrl(pending, options.redirectUri(provider));
      await store.savePendingUpstream({
        stateHash: hashOf(pending.state),
        provider,
        bindingHash: hashOf(binding),
        nonce: pending.nonce,
        codeVerifier: pending.codeVerifier,
        continueTo,
        linkUserId,
        createdAt: iso(),
        expiresAt: iso(PENDING_SECONDS),
      });
      return { location: location.href, binding };
    },

    async callback(provider, callback, binding, ip) {
      const party = parties.get(provider);
      const state = callback.searchParams.get("state");
      if (!party || state === null || binding === undefined)
        return { kind: "refused", status: 400, detail: NO_PENDING_SIGN_IN };
      // Spent now, whatever follows: a state works once.
      const pending = await store.takePendingUpstream(hashOf(state), iso());
      if (!pending || pending.provider !== provider || pending.bindingHash !== hashOf(binding))
        return { kind: "refused", status: 400, detail: NO_PENDING_SIGN_IN };
      const error = callback.searchParams.get("error");
      if (error !== null) {
        await audit.record("upstream", pending.linkUserId, `provider_error:${provider}`, ip);
        return { kind: "refused", status: 400, detail: "The sign-in was cancelled or refused at the provider." };
      }
      let assertion: Assertion;
      try {
        assertion = await party.finish(
          callback,
          { state, nonce: pending.nonce, codeVerifier: pending.codeVerifier },
          options.redirectUri(provider),
        );
      } catch (failure) {
        options.onFailure(provider, failure);
        await audit.record("upstream", pending.linkUserId, `failure:${provider}`, ip);
        const detail = failure instanceof UpstreamFailure ? failure.detail : "The sign-in failed. Try again.";
        return { kind: "refused", status: 400, detail };
      }
      return resolve(party, assertion, pending, ip);
    },

    async redeemSignIn(ticket, binding) {
      if (binding === undefined) return undefined;
      const found = await store.takeUpstreamTicket(hashOf(ticket), "sign_in", iso());
      if (!found || found.bindingHash !== hashOf(binding) || found.userId === null) return undefined;
      const user = await store.findById(found.userId);
      return user?.isActive ? user : undefined;
    },

    async completeLink(ticket, binding, user, ip) {
      if (binding === undefined) return "invalid";
      const found = await store.takeUpstreamTicket(hashOf(ticket), "link", iso());
      const party = found && parties.get(found.provider);
      if (!found || !party || found.bindingHash !== hashOf(binding)) return "invalid";
      // The user's token was checked before: the link holds only while that sign-in still does.
      const linked = await link(user.id, party, found, found.sealedTokens, { credentialStamp: user.credentialStamp });
      if (!linked) {
        const known = await store.findIdentity(found.issuer, found.subject);
        if (known?.userId !== user.id) return "elsewhere";
      }
      await audit.record("upstream", user.id, `linked:${found.provider}`, ip);
      return "linked";
    },

    async mailLink(ticket, binding, continueTo, ip, asked) {
      if (binding === undefined) return "invalid";
      const found = await store.takeUpstreamTicket(hashOf(ticket), "link", iso());
      const party = found && parties.get(found.provider);
      if (!found || !party || found.bindingHash !== hashOf(binding) || found.email === null) return "invalid";
      const user = await store.findByEmail(found.email);
      if (!user?.isActive) return "invalid";
      await options.limits.countMailRequest(ip, user.email);
      const token = random();
      await store.issueUpstreamLinkMail(
        {
          tokenHash: hashOf(token),
          userId: user.id,
          bindingHash: found.bindingHash,
          provider: found.provider,
          issuer: found.issuer,
          subject: found.subject,
          email: user.email,
          sealedTokens: found.sealedTokens,
          continueTo,
          createdAt: iso(),
          expiresAt: iso(LINK_MAIL_SECONDS),
        },
        options.mails.upstreamLink(user, token, party.provider.label, LINK_MAIL_SECONDS, asked),
      );
      options.wakeMail();
      await audit.record("upstream", user.id, `link_mailed:${found.provider}`, ip);
      return "sent";
    },

    async confirmMailedLink(token, binding, ip) {
      if (binding === undefined) return "invalid";
      const found = await store.takeUpstreamLinkMail(hashOf(token), hashOf(binding), iso());
      const party = found && parties.get(found.provider);
      if (!found || !party) return "invalid";
      // The mail proved the address it went to (still the account's, the account still active): on an
      // account whose address was never verified, that ends every other way in (auth/address-proof.ts).
      const proof = await store.proveAddress(found.userId, (account) => mailedLinkPlan(account, found.email), {
        link: {
          id: newId(clock()),
          userId: found.userId,
          provider: party.provider.name,
          issuer: found.issuer,
          subject: found.subject,
          email: found.email,
          sealedTokens: found.sealedTokens,
          createdAt: iso(),
        },
        events: (ended) => [
          ...endedEvents("upstream", ended, ip),
          { type: "upstream", outcome: `linked_by_mail:${found.provider}`, clientAddress: ip },
        ],
      });
      if (proof.outcome === "refused") return "invalid";
      if (proof.outcome === "elsewhere") return "elsewhere";
      // A sign-in ticket, spent by the upstream grant like after a callback: a second factor still applies.
      const ticket = await ticketFor("sign_in", found.bindingHash, party, found, proof.user.id, null);
      return { ticket, continueTo: found.continueTo };
    },

    async mayUnlink(user, identityId) {
      if (user.hashedPassword !== "") return true;
      const others = (await store.listIdentities(user.id)).filter(
        (identity: UpstreamIdentityRecord) => identity.id !== identityId,
      );
      return others.length > 0 || (await store.countPasskeys(user.id)) > 0;
    },
  };
}
