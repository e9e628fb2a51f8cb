// The users table's verbs (users.ts): every address through normalizeEmail;
// update and remove through writeUser (sql/shared.ts), which keeps the last
// active admin and tells caches of the change.
import { isLocale } from "../../i18n/locales.ts";
import { normalizeEmail } from "../../users/email.ts";
import { type Param, prepared } from "../db.ts";
import { newCredentialStamp, newId } from "../ids.ts";
import type { UserChanges, UserRecord, UserVerbs } from "../users.ts";
import { reader } from "./reader.ts";
import { filtered, flag, iso, type Row, type Shared } from "./shared.ts";
import { withSearch } from "./user-search.ts";

/** A user by id, and the reader of a user's row: also the rotation's and a redemption's (sessions, recovery). */
export const USER_BY_ID = prepared("users_by_id", "SELECT * FROM users WHERE id = $1");
export const readUser = reader<UserRecord>({
  isActive: flag,
  isAdmin: flag,
  // A tag this release does not speak (written by hand, or by a later release) reads as no choice.
  locale: (value) => (isLocale(value) ? value : null),
});

const USER_BY_EMAIL = prepared("users_by_email", "SELECT * FROM users WHERE email = $1");
const INSERT_USER = prepared(
  "users_insert",
  `INSERT INTO users (id, email, hashed_password, full_name, is_active, is_admin, created_at, updated_at,
                     credential_stamp, email_verified_at, locale)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10) RETURNING *`,
);

/**
 * The fields of a user whose change publishes user.updated (a password or a verification does not). The
 * saved language is one: a receiver that keeps a copy of the profile (to write to the user in their
 * language) learns of it as it learns of a new name.
 */
const PROFILE_FIELDS = ["email", "fullName", "isActive", "isAdmin", "locale"] as const;

/** The columns update() may set, by field: an allow-list, since the names go into the SQL. */
const COLUMN_OF: Record<keyof UserChanges, string> = {
  email: "email",
  hashedPassword: "hashed_password",
  fullName: "full_name",
  isActive: "is_active",
  isAdmin: "is_admin",
  emailVerifiedAt: "email_verified_at",
  locale: "locale",
};

export function userVerbs(s: Shared): UserVerbs {
  const { db, clock, now, changes, find, record, publish, sessionsEnded, endEverySession, activeAdmins, writeUser } = s;
  return {
    userChanges: db.userChanges(changes),
    async findByEmail(email) {
      return email.includes("\0") ? undefined : find(USER_BY_EMAIL, [normalizeEmail(email)], readUser);
    },
    findById: (id) => find(USER_BY_ID, [id], readUser),
    async list(query) {
      const { limit, after, email, isActive, isAdmin } = query;
      const conditions: [string, Param | undefined][] = [
        ["id >", after],
        ["email =", email === undefined ? undefined : normalizeEmail(email)],
        ["is_active =", isActive],
        ["is_admin =", isAdmin],
      ];
      const [sql, params] = filtered("SELECT * FROM users", conditions, "id", limit);
      const [searched, searchParams] = withSearch(sql, [...params], query, db.dialect.bytewiseEmail);
      return (await db.all<Row>(searched, searchParams)).map(readUser);
    },
    countActiveAdmins: () => activeAdmins(db),
    async create(user, { events = [] } = {}) {
      const at = clock();
      return db.transaction(async (tx) => {
        const { hashedPassword, fullName = null, isActive = true, isAdmin = false, emailVerifiedAt = null } = user;
        const locale = user.locale ?? null;
        const values = [newId(at), normalizeEmail(user.email), hashedPassword, fullName, isActive, isAdmin, iso(at)];
        const row = (await tx.one<Row>(INSERT_USER, [...values, newCredentialStamp(), emailVerifiedAt, locale])) as Row;
        await record(tx, events, row.id as string, { email: row.email as string });
        return readUser(row);
      });
    },
    async update(id, fields, { endSessions = false, events = [] } = {}) {
      const at = now();
      const params: Param[] = [at];
      const assignments = ["updated_at = $1"];
      for (const [field, value] of Object.entries(fields) as [keyof UserChanges, Param | undefined][]) {
        if (value === undefined) continue;
        params.push(field === "email" ? normalizeEmail(value as string) : value);
        assignments.push(`${COLUMN_OF[field]} = $${params.length}`);
      }
      if (endSessions || fields.email !== undefined) {
        // Changing only when the e-mail really changes would need a read first; a new stamp is harmless.
        params.push(newCredentialStamp());
        assignments.push(`credential_stamp = $${params.length}`);
      }
      if (endSessions) assignments.push("credentials_changed_at = $1");
      params.push(id);
      const sql = `UPDATE users SET ${assignments.join(", ")} WHERE id = $${params.length} RETURNING *`;
      return writeUser(id, fields.isAdmin === false || fields.isActive === false, async (tx) => {
        const row = await tx.one<Row>(sql, params);
        if (row === undefined) return undefined;
        if (endSessions) await endEverySession(tx, id, at);
        const user = readUser(row);
        await record(tx, events, id, { email: user.email });
        if (PROFILE_FIELDS.some((field) => fields[field] !== undefined)) {
          await publish(tx, "user.updated", id, { email: user.email });
        }
        return user;
      });
    },
    async remove(id, { events = [] } = {}) {
      return writeUser(id, true, async (tx) => {
        // The sessions go with the user (cascade); their relying parties are told first, while they are known.
        const live = await tx.all<{ id: string }>("SELECT id FROM sessions WHERE user_id = $1 AND revoked_at IS NULL", [
          id,
        ]);
        await sessionsEnded(
          tx,
          live.map((session) => session.id),
          now(),
        );
        const removed = (await tx.run("DELETE FROM users WHERE id = $1", [id])) > 0;
        if (removed) await record(tx, events, id);
        return removed;
      });
    },
  };
}
