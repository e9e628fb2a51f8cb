// The DPoP group of the benchmark (issue 36): GET /me with a DPoP-bound
// token and a fresh proof per request against GET /me with a bearer token,
// on the same service, alternating in the same rounds. Each proof is signed
// here, synchronously (ES256 with node:crypto), in autocannon's
// setupRequest, so every request carries its own jti, iat, ath and the
// service's nonce; the service checks one signature and writes one jti to
// its replay cache per request. Reported: the req/s ratio and the service's
// CPU per request for each (the load generator's own CPU per request too:
// it shares the cores and signs the proofs).
import { generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import autocannon from "autocannon";
import { accessTokenHash } from "../src/dpop/proof.ts";
import { cpuTimes } from "./processes.ts";

export interface DpopGroupDeps {
  serviceUrl: string;
  servicePid: number;
  rounds: number;
  seconds: number;
  /** A load of each kind before the rounds, this long (0: none). */
  warmupSeconds: number;
  connections: number;
  log: (message: string) => void;
  email: string;
  password: string;
}

export interface DpopRun {
  rps: number;
  served: number;
  errors: number;
  /** The service's CPU per request, whole process and event loop (ms). */
  cpuMs: number;
  eventLoopMs: number;
  /** This process's (autocannon, and the proofs' signing) CPU per request (ms). */
  generatorMs: number;
}

export interface DpopResult {
  bearer: DpopRun[];
  dpop: DpopRun[];
}

/** A key pair and a synchronous signer of DPoP proofs for it. */
export function proofSigner() {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = publicKey.export({ format: "jwk" });
  const header = Buffer.from(JSON.stringify({ typ: "dpop+jwt", alg: "ES256", jwk })).toString("base64url");
  return (claims: { htm: string; htu: string; ath?: string; nonce?: string }) => {
    const payload = { ...claims, iat: Math.floor(Date.now() / 1000), jti: randomBytes(12).toString("base64url") };
    const input = `${header}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}`;
    const signature = sign("sha256", Buffer.from(input), { key: privateKey as KeyObject, dsaEncoding: "ieee-p1363" });
    return `${input}.${signature.toString("base64url")}`;
  };
}

async function tokens(url: string, email: string, password: string, dpop?: string) {
  return fetch(`${url}/auth/token`, {
    method: "POST",
    headers: dpop === undefined ? {} : { dpop },
    body: new URLSearchParams({ username: email, password }),
  });
}

export async function measureDpopMe(deps: DpopGroupDeps): Promise<DpopResult> {
  const { serviceUrl: url, servicePid, email, password } = deps;
  // The URL the service names itself by (its listen address, or PUBLIC_URL): what a proof's htu says.
  const metadata = (await (await fetch(`${url}/.well-known/oauth-authorization-server`)).json()) as {
    token_endpoint: string;
  };
  const tokenUrl = metadata.token_endpoint;
  const base = tokenUrl.slice(0, -"/auth/token".length);
  const proof = proofSigner();
  await fetch(`${url}/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  const bearerToken = ((await (await tokens(url, email, password)).json()) as { access_token: string }).access_token;
  const challenged = await tokens(url, email, password, proof({ htm: "POST", htu: tokenUrl }));
  const nonce = challenged.headers.get("dpop-nonce") ?? undefined;
  const issued = await tokens(url, email, password, proof({ htm: "POST", htu: tokenUrl, ...(nonce ? { nonce } : {}) }));
  if (issued.status !== 200) throw new Error(`DPoP token request failed: ${issued.status} ${await issued.text()}`);
  const dpopToken = ((await issued.json()) as { access_token: string }).access_token;
  const ath = accessTokenHash(dpopToken);
  const meUrl = `${base}/me`;

  async function run(kind: "bearer" | "dpop", seconds: number): Promise<DpopRun> {
    const before = cpuTimes(servicePid);
    const generatorBefore = process.cpuUsage();
    const result = await new Promise<autocannon.Result>((resolve, reject) => {
      autocannon(
        {
          url: `${url}/me`,
          connections: deps.connections,
          duration: seconds,
          requests: [
            kind === "bearer"
              ? { method: "GET", headers: { authorization: `Bearer ${bearerToken}` } }
              : {
                  method: "GET",
                  setupRequest: (request: autocannon.Request) => ({
                    ...request,
                    headers: {
                      authorization: `DPoP ${dpopToken}`,
                      dpop: proof({ htm: "GET", htu: meUrl, ath, ...(nonce ? { nonce } : {}) }),
                    },
                  }),
                },
          ],
        },
        (error, finished) => (error ? reject(error) : resolve(finished)),
      );
    });
    const after = cpuTimes(servicePid);
    const generator = process.cpuUsage(generatorBefore);
    const served = Math.max(result.requests.total, 1);
    return {
      rps: result.requests.average,
      served: result.requests.total,
      errors: result.errors + result.non2xx,
      cpuMs: (after.process - before.process) / served,
      eventLoopMs: (after.mainThread - before.mainThread) / served,
      generatorMs: (generator.user + generator.system) / 1000 / served,
    };
  }

  if (deps.warmupSeconds > 0) {
    await run("bearer", deps.warmupSeconds);
    await run("dpop", deps.warmupSeconds);
  }
  const result: DpopResult = { bearer: [], dpop: [] };
  for (let round = 0; round < deps.rounds; round++) {
    deps.log(`GET /me with DPoP against bearer, round ${round + 1}/${deps.rounds}`);
    const order = round % 2 === 0 ? (["bearer", "dpop"] as const) : (["dpop", "bearer"] as const);
    for (const kind of order) result[kind].push(await run(kind, deps.seconds));
  }
  return result;
}
