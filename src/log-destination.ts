// Where the service's JSON log lines go when no person is at a terminal:
// standard output, in batches. Lines wait, joined into one string, until
// they make 4 KiB (a dozen access lines) or at the latest 200 ms, so a quiet
// service still logs promptly; the batch is then encoded into one fixed
// 64 KiB buffer in one call and goes out in one write(2).
//
// Encoding each line into the buffer as it came (as this file did before
// issue 34) cost a call into C++ and the flattening of a fresh string per
// line: about 250 ns of the line's 1.2 us. A batch lives for a dozen
// requests under load, far less than a scavenge's interval, so the waiting
// strings die young. (Pino's own sonic-boom destination with the same
// batching was seen to grow the old generation by 5 MB per 10 s of GET /me
// load, before the young generation's size was fixed (docs/performance.md,
// "The bimodal memory"); the access line's section there has the memory
// measured with this file.)
//
// Writes are synchronous, as before: a line is in the kernel's hands before
// the process can exit, and nothing queues in memory when the reader is
// slow. A full pipe (EAGAIN) is waited out, as pino's synchronous
// destination does.
import { writeSync } from "node:fs";

const CAPACITY = 64 * 1024;
const WRITE_AT = 4096;
const FLUSH_EVERY_MS = 200;
/** The most bytes one UTF-16 code unit can take in UTF-8. */
const MAX_BYTES_PER_UNIT = 3;
const pause = new Int32Array(new SharedArrayBuffer(4));

export class BatchedLogDestination {
  readonly #fd: number;
  readonly #buffer = Buffer.allocUnsafe(CAPACITY);
  #waiting = "";

  constructor(fd: number) {
    this.#fd = fd;
    setInterval(() => this.flush(), FLUSH_EVERY_MS).unref();
    // Whatever way the process ends (an uncaught error included), the last lines are written first.
    process.once("exit", () => this.flush());
  }

  /** pino calls this with each whole line, newline included. */
  write(line: string): boolean {
    this.#waiting += line;
    if (this.#waiting.length >= WRITE_AT) this.flush();
    return true;
  }

  /** Sends what is waiting now (at 4 KiB, before exit, and every 200 ms). */
  flush(): void {
    const text = this.#waiting;
    if (text.length === 0) return;
    this.#waiting = "";
    // A batch with a line longer than the buffer (a huge error report, say) goes out from a buffer of its own.
    if (text.length * MAX_BYTES_PER_UNIT > CAPACITY) this.#writeAll(Buffer.from(text));
    else this.#writeAll(this.#buffer.subarray(0, this.#buffer.write(text, 0, "utf8")));
  }

  #writeAll(bytes: Uint8Array): void {
    let offset = 0;
    while (offset < bytes.length) {
      try {
        offset += writeSync(this.#fd, bytes, offset, bytes.length - offset);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // A log that cannot be written is not a reason to stop answering requests: the lines are dropped.
        if (code !== "EAGAIN" && code !== "EBUSY") return;
        Atomics.wait(pause, 0, 0, 10);
      }
    }
  }
}
