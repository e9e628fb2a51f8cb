// The users list's search filters (issue 35, the admin console's Users screen): an e-mail prefix, a
// part of the name, verified or not, with or without a second factor, linked at an upstream provider.
// They are added to the list's statement (users.ts, built by filtered()) before its ORDER BY, with
// their parameters numbered after the list's own: the list keeps its keyset pages by id.

import { normalizeEmail } from "../../users/email.ts";
import type { Param } from "../db.ts";
import type { UserQuery } from "../users.ts";

const HAS_SECOND_FACTOR =
  "(EXISTS (SELECT 1 FROM totp_factors f WHERE f.user_id = users.id AND f.confirmed_at IS NOT NULL) " +
  "OR EXISTS (SELECT 1 FROM webauthn_credentials w WHERE w.user_id = users.id))";

/**
 * The first string after every string that begins with `prefix`, in code-point order (which is
 * UTF-8's byte order): the prefix with its last character's code point one higher. Undefined when
 * that character is the last one there is (then every string from `prefix` on is kept, and checked).
 */
export function prefixEnd(prefix: string): string | undefined {
  const chars = [...prefix];
  const last = chars.pop();
  if (last === undefined) return undefined;
  let code = (last.codePointAt(0) as number) + 1;
  if (code >= 0xd800 && code <= 0xdfff) code = 0xe000; // no surrogate is a character of its own
  return code > 0x10ffff ? undefined : chars.join("") + String.fromCodePoint(code);
}

/** `text` as a LIKE pattern that matches it anywhere, its wildcards escaped (ESCAPE '\\'). */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The statement `sql` (a SELECT from users with or without WHERE, then ORDER BY ... LIMIT $n) with
 * the search filters of `query` added: AND-ed, their parameters inserted before the limit's.
 * `emailKey` is the dialect's e-mail expression compared byte by byte, which an index answers (db.ts).
 */
export function withSearch(sql: string, params: Param[], query: UserQuery, emailKey: string): [string, Param[]] {
  const limit = params.pop() as Param;
  const clauses: string[] = [];
  const bind = (value: Param) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (query.emailPrefix !== undefined && query.emailPrefix !== "") {
    // Addresses are stored normalised (trimmed, lower-cased): the prefix is normalised the same way.
    const prefix = normalizeEmail(query.emailPrefix);
    const end = prefixEnd(prefix);
    clauses.push(`${emailKey} >= ${bind(prefix)}`);
    if (end !== undefined) clauses.push(`${emailKey} < ${bind(end)}`);
    // The range is exact in byte order; this keeps it exact when there is no end to it.
    else clauses.push(`substr(email, 1, ${[...prefix].length}) = ${bind(prefix)}`);
  }
  if (query.name !== undefined && query.name !== "") {
    // ASCII letters only are folded in SQL on SQLite (its lower()), so only they are folded here.
    const folded = query.name.replace(/[A-Z]/g, (c) => c.toLowerCase());
    clauses.push(`lower(full_name) LIKE ${bind(containing(folded))} ESCAPE '\\'`);
  }
  if (query.isVerified !== undefined) {
    clauses.push(query.isVerified ? "email_verified_at IS NOT NULL" : "email_verified_at IS NULL");
  }
  if (query.hasSecondFactor !== undefined) {
    clauses.push(query.hasSecondFactor ? HAS_SECOND_FACTOR : `NOT ${HAS_SECOND_FACTOR}`);
  }
  if (query.upstreamProvider !== undefined) {
    clauses.push(
      `EXISTS (SELECT 1 FROM upstream_identities i WHERE i.user_id = users.id AND i.provider = ${bind(query.upstreamProvider)})`,
    );
  }
  params.push(limit);
  if (clauses.length === 0) return [sql, params];
  const orderAt = sql.lastIndexOf(" ORDER BY ");
  const head = sql.slice(0, orderAt);
  const joined = clauses.join(" AND ");
  const where = head.includes(" WHERE ") ? `${head} AND ${joined}` : `${head.trimEnd()} WHERE ${joined}`;
  // The limit's placeholder moves to the last parameter.
  return [`${where} ORDER BY id LIMIT $${params.length}`, params];
}
