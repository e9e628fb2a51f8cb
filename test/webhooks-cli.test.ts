// `npm run cli -- webhooks ...`: create (the secret printed once), list
// (never the secret), rotate, enable, deliveries, redeliver, delete, and
// clear failures with non-zero exit codes.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { CLI, run, scratchDir } from "./process.ts";

const SECRET_LINE = /^secret (whsec_[A-Za-z0-9+/]{43}=)$/m;

describe("npm run cli -- webhooks", () => {
  test("create, list, rotate, enable, deliveries, redeliver, delete", async (t) => {
    const cwd = scratchDir(t);
    // hooks.example.com resolves nowhere: the address check (on by default) is turned off for it.
    const created = await run([CLI, "webhooks", "create", "https://hooks.example.com/a", "user.created,user.deleted"], {
      cwd,
      env: { WEBHOOK_REFUSE_PRIVATE_ADDRESSES: "false" },
    });
    assert.equal(created.code, 0, created.stderr);
    const id = /^created ([0-9a-f-]{36})$/m.exec(created.stdout)?.[1] as string;
    const secret = SECRET_LINE.exec(created.stdout)?.[1] as string;
    assert.ok(id && secret, created.stdout);

    const listed = await run([CLI, "webhooks", "list"], { cwd });
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(
      listed.stdout,
      `id\tenabled\turl\tevent_types\tdisabled_reason\n${id}\ttrue\thttps://hooks.example.com/a\tuser.created,user.deleted\t\n`,
    );

    const rotated = await run([CLI, "webhooks", "rotate", id], { cwd });
    assert.equal(rotated.code, 0, rotated.stderr);
    const fresh = SECRET_LINE.exec(rotated.stdout)?.[1];
    assert.ok(fresh && fresh !== secret);

    const store = openSqliteStore(join(cwd, "data", "users.db"));
    t.after(() => store.close());
    const stored = await store.findWebhookEndpoint(id);
    assert.ok(stored?.previousSealedSecret && !JSON.stringify(stored).includes(secret.slice(6)));

    assert.equal((await run([CLI, "webhooks", "enable", id], { cwd })).stdout, `enabled ${id}\n`);
    const log = await run([CLI, "webhooks", "deliveries", id], { cwd });
    assert.equal(log.stdout, "created_at\tevent_id\ttype\tattempt\tstatus_code\tduration_ms\terror\n");
    const unknownEvent = "0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f";
    const redeliver = await run([CLI, "webhooks", "redeliver", id, unknownEvent], { cwd });
    assert.deepEqual(
      [redeliver.code, redeliver.stderr],
      [1, `error: no event ${unknownEvent} for the webhook endpoint ${id}\n`],
    );
    const deleted = await run([CLI, "webhooks", "delete", id], { cwd });
    assert.deepEqual([deleted.code, deleted.stdout], [0, `deleted ${id}\n`]);
    const again = await run([CLI, "webhooks", "delete", id], { cwd });
    assert.deepEqual([again.code, again.stderr], [1, `error: no webhook endpoint with the id ${id}\n`]);
  });

  test("bad input: exit code 2 for usage, 1 for what the operator can fix", async (t) => {
    const cwd = scratchDir(t);
    const cases: [string[], number, RegExp][] = [
      [["webhooks", "rotate"], 2, /^error: webhooks rotate takes an endpoint id/],
      [["webhooks", "create", "https://x.example.com"], 2, /^error: webhooks create takes <url>/],
      [
        ["webhooks", "create", "https://x.example.com", "user.exploded"],
        1,
        /^error: unknown event type user\.exploded/,
      ],
      [
        ["webhooks", "create", "ftp://x.example.com", "user.created"],
        1,
        /^error: the url must be an http or https URL/,
      ],
      [["webhooks", "create", "https://u:p@x.example.com", "user.created"], 1, /^error: url: must not carry/],
      [["webhooks", "frobnicate"], 2, /^error: webhooks frobnicate takes an endpoint id/],
    ];
    for (const [args, code, message] of cases) {
      const result = await run([CLI, ...args], { cwd });
      assert.equal(result.code, code, `${args.join(" ")}: ${result.stderr}`);
      assert.match(result.stderr, message);
    }
  });
});
