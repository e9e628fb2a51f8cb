// Work that follows a committed write, such as queuing the mail that tells
// a user about it. The write happened and its success is what the client
// must hear (a retry would fail or do it twice), so a failure here is logged
// and swallowed, never turned into an error response.
import type { FastifyRequest } from "fastify";

export async function afterCommit(request: FastifyRequest, work: () => Promise<unknown>): Promise<void> {
  try {
    await work();
  } catch (error) {
    request.log.warn({ err: error }, "the follow-up of a committed write failed; the write stands");
  }
}
