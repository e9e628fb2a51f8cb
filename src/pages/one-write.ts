// A kept page's bytes (branding/page-parts.ts's PageBytes) sent with the
// answer's head in one socket write. Node's HTTP/1 response joins the head and
// the first body chunk into one write only when that chunk is a string in
// latin1 or UTF-8; a Buffer, which is what a compressed page is, goes out as a
// second chunk of a writev, and on the sign-in page that writev was about a
// quarter of the busy time (docs/performance.md, "The sign-in page"). So the
// page still goes through Fastify's reply as its Buffer (every hook, header
// and the Content-Length from the Buffer stay Fastify's), and only the final
// `end` of this one response writes the same bytes as a latin1 string, which
// Node sends with the head (latin1 maps each byte to one character and back).
import { ServerResponse } from "node:http";
import type { FastifyReply } from "fastify";

/** The latin1 string of each kept Buffer, made once: the Buffers live as long as their page's bytes. */
const latin1Of = new WeakMap<Buffer, string>();

/** Sends `bytes` (a kept page's, never changed) as the reply's body, written with the head in one go. */
export function sendKeptBytes(reply: FastifyReply, bytes: Buffer): FastifyReply {
  const raw = reply.raw;
  // HTTP/2 (or inject's response) has its own framing: the plain send.
  if (raw instanceof ServerResponse) {
    let text = latin1Of.get(bytes);
    if (text === undefined) {
      text = bytes.toString("latin1");
      latin1Of.set(bytes, text);
    }
    const body = text;
    // The response's own end (inject's response, a ServerResponse too, has one of its own).
    const end = raw.end;
    // Only the page's own end is rewritten: an error answer sent instead (an onSend hook's) goes as it is.
    raw.end = function endInOneWrite(this: ServerResponse, ...args: unknown[]) {
      if (args[0] === bytes) return end.call(this, body, "latin1", args[2] as (() => void) | undefined);
      return (end as (...rest: unknown[]) => ServerResponse).apply(this, args);
    } as ServerResponse["end"];
  }
  return reply.send(bytes);
}
