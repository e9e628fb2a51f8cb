// The storage boundary. Routes and auth speak these domain verbs only: one
// interface per aggregate, in the file of its name beside this one, and
// UserStore, the union the app receives. sql-store.ts writes every verb once,
// over either database (db.ts); open.ts picks the backend from the parsed
// DATABASE_URL, never by guessing; each backend (sqlite.ts, postgres.ts) maps
// its own unique-violation code to EmailTaken.
//
// Every verb that writes more than one row is one transaction, so a crash, a
// cut connection or a failed statement leaves all of it or none of it; each
// aggregate's file lists its own. Across them all: an audit event is written
// with the change it describes, with its notice (a mail) and its webhook
// events (audit.ts); every ending of a session ends the client sessions begun
// in it and queues the back-channel logouts owed (sessions.ts). A verb that
// has committed answers from what it wrote: nothing after the commit can turn
// its success into a failure.
import type { AdminReadVerbs } from "./admin.ts";
import type { AuditVerbs } from "./audit.ts";
import type { BackchannelLogoutVerbs } from "./backchannel-logouts.ts";
import type { BrandVerbs } from "./branding.ts";
import type { ClientVerbs } from "./clients.ts";
import type { DeviceVerbs } from "./device.ts";
import type { MailVerbs } from "./mail.ts";
import type { MailSignInVerbs } from "./mail-sign-ins.ts";
import type { PushedRequestVerbs } from "./pushed-requests.ts";
import type { RecoveryVerbs } from "./recovery.ts";
import type { SecondFactorVerbs } from "./second-factors.ts";
import type { SessionVerbs } from "./sessions.ts";
import type { UpstreamVerbs } from "./upstream.ts";
import type { UserVerbs } from "./users.ts";
import type { WebhookVerbs } from "./webhooks.ts";

export type {
  AdminReadVerbs,
  Backlog,
  OverviewCounts,
  ServiceEvent,
  ServiceEventQuery,
  SignInBucket,
} from "./admin.ts";
export type { AuditEntry, AuditEvent, AuditEventType, AuditQuery, AuditVerbs } from "./audit.ts";
export { ADMIN_ACTOR, AUDIT_EVENT_TYPES } from "./audit.ts";
export type { BackchannelLogoutMessage, BackchannelLogoutVerbs } from "./backchannel-logouts.ts";
export type { BrandLogo, BrandRecord, BrandValues, BrandVerbs } from "./branding.ts";
export { SERVICE_BRAND } from "./branding.ts";
export type {
  AuthorizationCodeRecord,
  ClientAuthMethod,
  ClientMetadataRecord,
  ClientRecord,
  ClientSessionRecord,
  ClientVerbs,
  CodeRedemption,
  ConsentRecord,
  NewAuthorizationCode,
  NewClient,
} from "./clients.ts";
export type {
  DeviceAuthorizationRecord,
  DeviceAuthorizationStatus,
  DeviceDecision,
  DeviceVerbs,
  NewDeviceAuthorization,
} from "./device.ts";
export type {
  DeliveryOutcome,
  MailKind,
  MailStatus,
  MailVerbs,
  NewOutboxMessage,
  NoticeKind,
  OutboxMessage,
} from "./mail.ts";
export { NOTICE_KINDS } from "./mail.ts";
export type { MailSignInRecord, MailSignInVerbs, NewMailSignIn } from "./mail-sign-ins.ts";
export type { NewPushedRequest, PushedRequestRecord, PushedRequestUse, PushedRequestVerbs } from "./pushed-requests.ts";
export type {
  AccountTokenPurpose,
  AccountTokenRecord,
  AddressProofPlan,
  AddressProofResult,
  EndedWaysIn,
  NewAccountToken,
  RecoveryVerbs,
  Redemption,
} from "./recovery.ts";
export type {
  MfaChallenge,
  NewPasskey,
  PasskeyRecord,
  SecondFactors,
  SecondFactorVerbs,
  TotpFactor,
  WebAuthnChallengeRecord,
  WebAuthnPurpose,
} from "./second-factors.ts";
export type {
  ClientBinding,
  DeviceSighting,
  NewSession,
  PresentedRefreshToken,
  Rotation,
  SessionPage,
  SessionRecord,
  SessionVerbs,
} from "./sessions.ts";
export type {
  NewUpstreamIdentity,
  UpstreamIdentityRecord,
  UpstreamLinkMailRecord,
  UpstreamPendingRecord,
  UpstreamTicketRecord,
  UpstreamVerbs,
} from "./upstream.ts";
export type {
  NewUser,
  SignedInAs,
  UserChangeFeed,
  UserChanges,
  UserQuery,
  UserRecord,
  UserVerbs,
  WriteOptions,
} from "./users.ts";
export type {
  NewWebhookEndpoint,
  WebhookAttempt,
  WebhookEndpointChanges,
  WebhookEndpointRecord,
  WebhookEvent,
  WebhookMessage,
  WebhookMessageStatus,
  WebhookVerbs,
} from "./webhooks.ts";

/** Every aggregate's verbs: what the app, the CLI and the tests receive. */
export interface UserStore
  extends UserVerbs,
    SessionVerbs,
    SecondFactorVerbs,
    RecoveryVerbs,
    MailVerbs,
    ClientVerbs,
    UpstreamVerbs,
    WebhookVerbs,
    AuditVerbs,
    AdminReadVerbs,
    BackchannelLogoutVerbs,
    PushedRequestVerbs,
    DeviceVerbs,
    BrandVerbs,
    MailSignInVerbs {
  /** Resolves when the database answers; throws StoreUnavailable otherwise (for /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
