// The device authorization grant's verbs (device.ts), each one statement:
// the poll reads one row by the primary key (the device code's hash), and
// every change of state is a conditional UPDATE ... RETURNING, so that of two
// instances deciding or redeeming one request at once exactly one wins.
import type { DeviceAuthorizationRecord, DeviceVerbs } from "../device.ts";
import { reader } from "./reader.ts";
import type { Row, Shared } from "./shared.ts";

const readDevice = reader<DeviceAuthorizationRecord>({ intervalSeconds: (value) => Number(value) });

export function deviceVerbs({ db }: Shared): DeviceVerbs {
  return {
    async createDeviceAuthorization(record) {
      const inserted = await db.run(
        `INSERT INTO device_authorizations (device_code_hash, user_code_hash, client_id, scope, status,
                                            interval_seconds, created_at, expires_at)
         VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7) ON CONFLICT DO NOTHING`,
        [
          record.deviceCodeHash,
          record.userCodeHash,
          record.clientId,
          record.scope,
          record.intervalSeconds,
          record.createdAt,
          record.expiresAt,
        ],
      );
      return inserted === 1;
    },
    async findDeviceAuthorization(deviceCodeHash) {
      const row = await db.one<Row>("SELECT * FROM device_authorizations WHERE device_code_hash = $1", [
        deviceCodeHash,
      ]);
      return row && readDevice(row);
    },
    async findPendingDeviceAuthorization(userCodeHash, now) {
      const row = await db.one<Row>(
        `SELECT * FROM device_authorizations
         WHERE user_code_hash = $1 AND status = 'pending' AND expires_at > $2`,
        [userCodeHash, now],
      );
      return row && readDevice(row);
    },
    async decideDeviceAuthorization(userCodeHash, decision, now) {
      const row = await db.one<Row>(
        `UPDATE device_authorizations SET status = $1, user_id = $2, browser_session_id = $3, decided_at = $4
         WHERE user_code_hash = $5 AND status = 'pending' AND expires_at > $6 RETURNING *`,
        [decision.status, decision.userId, decision.browserSessionId, decision.at, userCodeHash, now],
      );
      return row && readDevice(row);
    },
    async recordDevicePoll(deviceCodeHash, at, slowDownSeconds) {
      await db.run(
        `UPDATE device_authorizations SET last_polled_at = $1, interval_seconds = interval_seconds + $2
         WHERE device_code_hash = $3`,
        [at, slowDownSeconds, deviceCodeHash],
      );
    },
    async redeemDeviceAuthorization(deviceCodeHash, at) {
      const row = await db.one<Row>(
        `UPDATE device_authorizations SET status = 'redeemed', redeemed_at = $1
         WHERE device_code_hash = $2 AND status = 'approved' RETURNING *`,
        [at, deviceCodeHash],
      );
      return row && readDevice(row);
    },
    purgeDeviceAuthorizations(before, limit) {
      return db.run(
        `DELETE FROM device_authorizations WHERE device_code_hash IN
           (SELECT device_code_hash FROM device_authorizations WHERE expires_at < $1 LIMIT $2)`,
        [before, limit],
      );
    },
  };
}
