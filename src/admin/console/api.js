// The console's only way to the service: the documented admin API, with the
// access token held in memory (never in web storage). An answer of 401 gets
// one refresh and one retry; every refusal becomes an ApiError carrying the
// API's `detail`, which the screens show in words.

export class ApiError extends Error {
  /** @param {number} status @param {string} detail */
  constructor(status, detail) {
    super(detail);
    this.status = status;
    this.detail = detail;
  }
}

/**
 * @param {{ accessToken(): string | undefined, refresh(): Promise<boolean> }} session
 */
export function createApi(session) {
  /** A JSON body, or a raw one (a Blob: a file sent as itself, with its own type). */
  async function send(method, path, body, accept = "application/json") {
    const headers = { accept };
    const token = session.accessToken();
    if (token) headers.authorization = `Bearer ${token}`;
    const raw = body instanceof Blob;
    if (raw) headers["content-type"] = body.type || "application/octet-stream";
    else if (body !== undefined) headers["content-type"] = "application/json";
    return fetch(path, {
      method,
      headers,
      body: body === undefined || raw ? body : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body] JSON, or a Blob sent as its raw bytes with its type
   */
  async function request(method, path, body) {
    let answer = await send(method, path, body);
    if (answer.status === 401 && (await session.refresh())) answer = await send(method, path, body);
    if (answer.status === 204) return undefined;
    const text = await answer.text();
    let parsed;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!answer.ok) {
      const detail =
        parsed && typeof parsed.detail === "string"
          ? parsed.detail
          : Array.isArray(parsed?.detail)
            ? parsed.detail.map((item) => item.msg ?? String(item)).join("; ")
            : `The service answered ${answer.status}.`;
      throw new ApiError(answer.status, detail);
    }
    return parsed;
  }

  /**
   * A file answer (an export) as a Blob, fetched with the Authorization header: a download link
   * carrying the token in its URL would leave it in history and logs.
   * @param {string} path
   */
  async function download(path) {
    let answer = await send("GET", path, undefined, "*/*");
    if (answer.status === 401 && (await session.refresh())) answer = await send("GET", path, undefined, "*/*");
    if (!answer.ok) {
      const parsed = await answer.json().catch(() => undefined);
      throw new ApiError(
        answer.status,
        typeof parsed?.detail === "string" ? parsed.detail : `The service answered ${answer.status}.`,
      );
    }
    return { blob: await answer.blob(), disposition: answer.headers.get("content-disposition") };
  }

  return {
    download,
    get: (path) => request("GET", path),
    post: (path, body) => request("POST", path, body ?? {}),
    patch: (path, body) => request("PATCH", path, body),
    put: (path, body) => request("PUT", path, body),
    /** A file (an image) as the raw body, with its type: the logo routes read the bytes themselves. */
    upload: (path, file) => request("PUT", path, file),
    delete: (path) => request("DELETE", path),
  };
}

/** A query string from the values that are set. */
export function query(values) {
  const entries = Object.entries(values).filter(([, value]) => value !== undefined && value !== null && value !== "");
  return entries.length === 0 ? "" : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)]))}`;
}
