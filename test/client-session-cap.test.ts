// MAX_SESSIONS_PER_USER with OpenID Connect clients: the user's own sessions
// (the password flow, the sign-in page) and each client's sessions of the
// user count apart, each up to the cap. An app that redeems codes often ends
// only its own oldest sessions, never the user's own sign-ins (nor another
// app's). The user's sign-ins end an app's session only as every ending of a
// browser session does: the apps' sessions begun in it end with it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { requestToken, testConfig } from "./helpers.ts";
import { clientTokens, PASSWORD, setUp, stillLive } from "./oidc/client-flow.ts";

const CAP = 2;

describe("MAX_SESSIONS_PER_USER and client sessions", () => {
  test("each client's sessions and the user's own count apart, each up to the cap", async (t) => {
    const setup = await setUp(t, { sessions: { ...testConfig().sessions, maxPerUser: CAP } });
    const login = async () =>
      (await requestToken(setup.app, { username: "ada@example.com", password: PASSWORD })).json() as {
        refresh_token: string;
      };
    // The user's own: the browser session's sign-in (setUp), and one more.
    const second = await login();

    // Three sessions of the partner app: its oldest ends, nothing of the user's own.
    const partner = [
      await clientTokens(setup, "partner"),
      await clientTokens(setup, "partner"),
      await clientTokens(setup, "partner"),
    ];
    const post = await clientTokens(setup, "post");
    assert.deepEqual(
      [
        await stillLive(setup, "own", setup.own),
        await stillLive(setup, "own", second),
        await stillLive(setup, "partner", partner[1] as { refresh_token: string }),
        await stillLive(setup, "partner", partner[2] as { refresh_token: string }),
        await stillLive(setup, "post", post),
      ],
      [true, true, true, true, true],
      "the user's own sessions, the partner's two newest and the other app's",
    );
    assert.equal(await stillLive(setup, "partner", partner[0] as { refresh_token: string }), false);

    // A third sign-in of the user's own ends the oldest of them, the browser session, and with it the apps'
    // sessions begun in it (all of them here): the session model's one rule, whatever ends a browser session.
    const third = await login();
    assert.deepEqual(
      [
        await stillLive(setup, "own", setup.own),
        await stillLive(setup, "own", second),
        await stillLive(setup, "own", third),
        await stillLive(setup, "partner", partner[1] as { refresh_token: string }),
        await stillLive(setup, "partner", partner[2] as { refresh_token: string }),
        await stillLive(setup, "post", post),
      ],
      [false, true, true, false, false, false],
    );

    // Each ending is in the audit trail: the cap's two, and the apps' sessions that ended with the browser session.
    const ended = (await setup.store.listEvents({ userId: setup.user.id, limit: 100 })).filter(
      (event) => event.type === "session_revocation",
    );
    assert.deepEqual(ended.map((event) => event.outcome).sort(), [
      "browser_session_ended",
      "browser_session_ended",
      "browser_session_ended",
      "session_limit",
      "session_limit",
    ]);
  });
});
