// The device grant's group of the benchmark (issue 36): a device polling the
// token endpoint before its person has approved, answered 400
// authorization_pending, against an introspection the service refuses at
// once (a known client, a wrong secret: 401), on the same service,
// alternating in the same rounds. A device code may be polled once per
// interval (1 s here, DEVICE_POLL_INTERVAL_SECONDS' least), and sooner is
// slow_down; so the load goes round many pending codes, each polled about
// once in `cycleSeconds`, and every answer's error is counted: the figure
// holds only if the polls were answered authorization_pending.
import autocannon from "autocannon";
import { cpuTimes } from "./processes.ts";

export interface DevicePollDeps {
  serviceUrl: string;
  servicePid: number;
  rounds: number;
  seconds: number;
  connections: number;
  /** A public client registered for the device grant. */
  deviceClientId: string;
  /** A confidential client, whose introspections are refused with a wrong secret. */
  client: { id: string; secret: string };
  /** Pending device codes to go round; enough that none is polled twice within a second. */
  codes: number;
  log: (message: string) => void;
}

export interface PollRun {
  rps: number;
  served: number;
  /** Answers other than the one expected (400 authorization_pending; 401 for the introspection). */
  unexpected: number;
  /** Of the polls: answered slow_down (the load outran the codes). */
  slowDown: number;
  /** The service's CPU per request, whole process (ms). */
  cpuMs: number;
}

export interface DevicePollResult {
  codes: number;
  polls: PollRun[];
  refusedIntrospections: PollRun[];
}

const FORM = { "content-type": "application/x-www-form-urlencoded" };
const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

async function pendingCodes(url: string, clientId: string, count: number): Promise<string[]> {
  const codes: string[] = [];
  const body = new URLSearchParams({ client_id: clientId, scope: "openid" }).toString();
  const one = async () => {
    const answer = await fetch(`${url}/oauth/device_authorization`, { method: "POST", headers: FORM, body });
    if (answer.status !== 200)
      throw new Error(`device authorization answered ${answer.status}: ${await answer.text()}`);
    codes.push(((await answer.json()) as { device_code: string }).device_code);
  };
  for (let i = 0; i < count; i += 32) await Promise.all(Array.from({ length: Math.min(32, count - i) }, one));
  return codes;
}

export async function measureDevicePolls(deps: DevicePollDeps): Promise<DevicePollResult> {
  const { serviceUrl: url, servicePid } = deps;
  deps.log(`creating ${deps.codes} pending device codes`);
  const codes = await pendingCodes(url, deps.deviceClientId, deps.codes);
  const pollBodies = codes.map((code) =>
    new URLSearchParams({
      grant_type: DEVICE_CODE_GRANT,
      device_code: code,
      client_id: deps.deviceClientId,
    }).toString(),
  );
  const wrongSecret = `Basic ${Buffer.from(`${deps.client.id}:not-the-secret`).toString("base64")}`;
  // The introspections go round as many bodies of the same length, so the load generator does the same
  // work for both loads (a body chosen per request, each answer's body read): it shares the cores.
  const introspectBodies = codes.map((code) => new URLSearchParams({ token: code }).toString());
  // Each code is polled no sooner than a second after its last poll: the first round starts now.
  await new Promise((resolve) => setTimeout(resolve, 1100));
  let next = 0;

  async function run(kind: "poll" | "introspection"): Promise<PollRun> {
    let unexpected = 0;
    let slowDown = 0;
    const before = cpuTimes(servicePid);
    const request: autocannon.Request =
      kind === "poll"
        ? {
            method: "POST",
            path: "/auth/token",
            headers: FORM,
            setupRequest: (request: autocannon.Request) => {
              next = (next + 1) % pollBodies.length;
              return { ...request, body: pollBodies[next] };
            },
            onResponse: (status: number, body: string) => {
              if (status === 400 && body.includes('"authorization_pending"')) return;
              if (body.includes('"slow_down"')) slowDown++;
              else unexpected++;
            },
          }
        : {
            method: "POST",
            path: "/auth/introspect",
            headers: { ...FORM, authorization: wrongSecret },
            setupRequest: (request: autocannon.Request) => {
              next = (next + 1) % introspectBodies.length;
              return { ...request, body: introspectBodies[next] };
            },
            onResponse: (status: number, body: string) => {
              if (status !== 401 || !body.includes('"detail"')) unexpected++;
            },
          };
    const result = await new Promise<autocannon.Result>((resolve, reject) => {
      autocannon(
        { url, connections: deps.connections, duration: deps.seconds, requests: [request] },
        (error, finished) => (error ? reject(error) : resolve(finished)),
      );
    });
    const after = cpuTimes(servicePid);
    const served = Math.max(result.requests.total, 1);
    return {
      rps: result.requests.average,
      served: result.requests.total,
      unexpected: unexpected + result.errors,
      slowDown,
      cpuMs: (after.process - before.process) / served,
    };
  }

  const result: DevicePollResult = { codes: codes.length, polls: [], refusedIntrospections: [] };
  for (let round = 0; round < deps.rounds; round++) {
    deps.log(`device polls against refused introspections, round ${round + 1}/${deps.rounds}`);
    const order = round % 2 === 0 ? (["poll", "introspection"] as const) : (["introspection", "poll"] as const);
    for (const kind of order) {
      const measured = await run(kind);
      (kind === "poll" ? result.polls : result.refusedIntrospections).push(measured);
      // A code polled at the end of this load waits its interval before the next load reaches it.
      await new Promise((resolve) => setTimeout(resolve, 1100));
    }
  }
  return result;
}
