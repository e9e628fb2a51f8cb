// The service-wide audit log as a file (GET /events?format=csv|jsonl): the
// rows of every page, read one page at a time from the store and written as
// they come, so that an export of millions of events holds one page in
// memory. CSV is RFC 4180 (CRLF line ends, a header row, quotes where a cell
// needs them), with every cell a spreadsheet would run as a formula (one that
// starts with =, +, -, @, a tab or a carriage return) prefixed with `'`
// (OWASP's CSV injection advice): outcomes and e-mails are partly chosen by
// whoever caused the event.
import { Readable } from "node:stream";
import type { ServiceEvent, ServiceEventQuery, UserStore } from "../store/store.ts";
import { type EventOut, toEventOut } from "./event-schemas.ts";

/** Rows read per query while exporting. */
export const EXPORT_PAGE_SIZE = 500;

export const CSV_COLUMNS = [
  "id",
  "created_at",
  "type",
  "outcome",
  "user_id",
  "user_email",
  "client_address",
  "actor_id",
  "actor_email",
] as const satisfies readonly (keyof EventOut)[];

const FORMULA_START = /^[=+\-@\t\r]/;

/** One CSV cell: defused if a spreadsheet would take it for a formula, then quoted if it needs quotes. */
export function csvCell(value: string | null): string {
  if (value === null) return "";
  const safe = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

export function csvRow(cells: readonly (string | null)[]): string {
  return `${cells.map(csvCell).join(",")}\r\n`;
}

function csvLine(event: EventOut): string {
  return csvRow(CSV_COLUMNS.map((column) => event[column]));
}

function jsonLine(event: EventOut): string {
  return `${JSON.stringify(event)}\n`;
}

type Filters = Omit<ServiceEventQuery, "limit">;

const readPage = (store: UserStore, query: Filters, before: string | undefined) =>
  store.listServiceEvents({ ...query, ...(before ? { before } : {}), limit: EXPORT_PAGE_SIZE });

/** Every event the query matches, newest first, one page at a time, from the first page already read. */
async function* pages(store: UserStore, query: Filters, first: ServiceEvent[]): AsyncGenerator<ServiceEvent[]> {
  let rows = first;
  for (;;) {
    if (rows.length > 0) yield rows;
    if (rows.length < EXPORT_PAGE_SIZE) return;
    rows = await readPage(store, query, rows.at(-1)?.id);
  }
}

/**
 * The export as a stream of text, a header row first for CSV. The first page is read before the stream
 * is made, so an unreachable database is still a 503 in the error shape rather than a 200 cut short; a
 * failure after that can only end the connection (the status has gone).
 */
export async function exportStream(store: UserStore, query: Filters, format: "csv" | "jsonl"): Promise<Readable> {
  const first = await readPage(store, query, query.before);
  const line = format === "csv" ? csvLine : jsonLine;
  async function* lines() {
    if (format === "csv") yield csvRow(CSV_COLUMNS);
    for await (const rows of pages(store, query, first)) yield rows.map((row) => line(toEventOut(row))).join("");
  }
  return Readable.from(lines(), { objectMode: false });
}
