// The admin console's group of the benchmark (issue 35): its time to first
// screen as a server cost. A first screen is what a browser fetches before it
// can draw anything: the console's page (/admin/), the stylesheet and the
// entry module the page names, and every module the entry pulls in by static
// imports (followed level by level, each level's files in parallel, as a
// browser's module loader does). Each first screen runs cold: a new keep-alive
// agent (no connection, no cache; up to six connections, a browser's limit per
// host), so it pays its connections' set-up, and then keeps them alive for its
// other files. The sizes are those of the files as served, and gzipped (what a
// compressing proxy would send; the service itself sends them uncompressed,
// from memory). The sign-in that follows (the redirect to the sign-in page,
// the token request, the API's answers) is no part of it: those are the
// service's routes measured elsewhere.
import { Agent, request } from "node:http";
import { gzipSync } from "node:zlib";

export interface FirstScreenFile {
  path: string;
  bytes: number;
  gzipBytes: number;
}

export interface FirstScreen {
  /** Milliseconds from the first request to the last byte of the last file. */
  ms: number;
  files: FirstScreenFile[];
}

/** The static, relative imports and re-exports of a module (bare specifiers cannot load in a browser). */
const IMPORT = /(?:^|[;\n])\s*(?:import|export)\s+(?:[^'";]*?\sfrom\s*)?["'](\.{1,2}\/[^"']+)["']/g;
const STYLESHEET = /<link\b[^>]*\brel="stylesheet"[^>]*\bhref="([^"]+)"/g;
const MODULE_SCRIPT = /<script\b[^>]*\btype="module"[^>]*\bsrc="([^"]+)"/g;

function get(agent: Agent, url: URL): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      { agent, headers: { accept: "*/*", "accept-encoding": "gzip, deflate, br", "cache-control": "no-cache" } },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on("data", (chunk: Buffer) => chunks.push(chunk));
        answer.on("end", () =>
          answer.statusCode === 200
            ? resolve(Buffer.concat(chunks))
            : reject(new Error(`GET ${url.pathname}: ${answer.statusCode}`)),
        );
        answer.on("error", reject);
      },
    );
    outgoing.on("error", reject);
    outgoing.end();
  });
}

const matches = (text: string, pattern: RegExp) => [...text.matchAll(pattern)].map((match) => match[1] as string);

/** One cold first screen of the console at `base` (the service's address, no trailing slash). */
export async function firstScreen(base: string): Promise<FirstScreen> {
  const agent = new Agent({ keepAlive: true, maxSockets: 6 });
  try {
    const started = performance.now();
    const pageUrl = new URL("/admin/", base);
    const page = await get(agent, pageUrl);
    const bodies: { path: string; body: Buffer }[] = [];
    const keep = (url: URL, body: Buffer) => bodies.push({ path: url.pathname, body });
    keep(pageUrl, page);
    const html = page.toString("utf8");
    const seen = new Set<string>();
    const stylesheets = matches(html, STYLESHEET).map((href) => new URL(href, pageUrl));
    let level = matches(html, MODULE_SCRIPT).map((src) => new URL(src, pageUrl));
    const styles = Promise.all(
      stylesheets.map(async (url) => {
        seen.add(url.href);
        keep(url, await get(agent, url));
      }),
    );
    while (level.length > 0) {
      const fresh = level.filter((url) => !seen.has(url.href));
      for (const url of fresh) seen.add(url.href);
      const fetched = await Promise.all(fresh.map((url) => get(agent, url)));
      const next: URL[] = [];
      fetched.forEach((body, index) => {
        const url = fresh[index] as URL;
        keep(url, body);
        for (const specifier of matches(body.toString("utf8"), IMPORT)) next.push(new URL(specifier, url));
      });
      level = next;
    }
    await styles;
    const ms = performance.now() - started;
    // Sizes after the clock stops: gzip is the benchmark's work, not the service's.
    const files = bodies
      .map(({ path, body }) => ({ path, bytes: body.length, gzipBytes: gzipSync(body).length }))
      .sort((a, b) => a.path.localeCompare(b.path));
    return { ms, files };
  } finally {
    agent.destroy();
  }
}

/** `count` cold first screens one after another: each one's time, and the files of the first. */
export async function firstScreens(base: string, count: number): Promise<{ ms: number[]; files: FirstScreenFile[] }> {
  const ms: number[] = [];
  let files: FirstScreenFile[] = [];
  for (let i = 0; i < count; i++) {
    const screen = await firstScreen(base);
    ms.push(screen.ms);
    if (i === 0) files = screen.files;
  }
  return { ms, files };
}
