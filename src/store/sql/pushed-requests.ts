// The verbs of pushed authorization requests (pushed-requests.ts): saved,
// spent by one conditional UPDATE (the winner of two presentations at once
// is the one whose UPDATE matched), and purged once expired.
import type { PushedRequestRecord, PushedRequestVerbs } from "../pushed-requests.ts";
import { reader } from "./reader.ts";
import type { Row, Shared } from "./shared.ts";

const readPushedRequest = reader<PushedRequestRecord>({
  parameters: (value) => JSON.parse(value as string) as Record<string, string>,
});

export function pushedRequestVerbs({ db }: Shared): PushedRequestVerbs {
  return {
    async savePushedRequest(request) {
      await db.run(
        `INSERT INTO pushed_authorization_requests (reference_hash, client_id, parameters, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5)`,
        [
          request.referenceHash,
          request.clientId,
          JSON.stringify(request.parameters),
          request.createdAt,
          request.expiresAt,
        ],
      );
    },
    async usePushedRequest(referenceHash, clientId, at) {
      const spent = await db.one<Row>(
        `UPDATE pushed_authorization_requests SET used_at = $1
         WHERE reference_hash = $2 AND client_id = $3 AND used_at IS NULL AND expires_at > $1 RETURNING *`,
        [at, referenceHash, clientId],
      );
      if (spent) return { outcome: "used", request: readPushedRequest(spent) };
      // Why not: read after the UPDATE missed, for the answer and the audit trail only.
      const known = await db.one<Row>("SELECT * FROM pushed_authorization_requests WHERE reference_hash = $1", [
        referenceHash,
      ]);
      if (known === undefined) return { outcome: "unknown" };
      const request = readPushedRequest(known);
      if (request.clientId !== clientId) return { outcome: "other_client" };
      if (request.usedAt !== null) return { outcome: "reused" };
      return { outcome: "expired" };
    },
    purgePushedRequests(before, limit) {
      return db.run(
        `DELETE FROM pushed_authorization_requests WHERE reference_hash IN
           (SELECT reference_hash FROM pushed_authorization_requests WHERE expires_at < $1 LIMIT ${Math.trunc(limit)})`,
        [before],
      );
    },
  };
}
