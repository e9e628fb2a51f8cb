// The logger each request carries (request.log), made only when a request
// actually logs something. Fastify gives every request a child of the
// service's logger bound to its request id; building a pino child (bindings
// serialised, a new object chain) cost more per request than the whole
// token check's cache hit, and almost no request logs anything besides the
// access line, which is written separately (access-log.ts). This stand-in
// has the logger's methods; the first call at an enabled level builds the
// real child and hands it the line. Lines below the level cost one check.
import type { FastifyBaseLogger, FastifyServerOptions } from "fastify";
import type { Bindings, ChildLoggerOptions, LevelWithSilent } from "pino";

type Level = Exclude<LevelWithSilent, "silent">;

class RequestLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get level(): string {
    return this.#parent.level;
  }

  #real(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  #write(level: Level, args: unknown[]): void {
    if (!(this.#parent as unknown as { isLevelEnabled(level: string): boolean }).isLevelEnabled(level)) return;
    (this.#real()[level] as (...args: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]): void {
    this.#write("fatal", args);
  }
  error(...args: unknown[]): void {
    this.#write("error", args);
  }
  warn(...args: unknown[]): void {
    this.#write("warn", args);
  }
  info(...args: unknown[]): void {
    this.#write("info", args);
  }
  debug(...args: unknown[]): void {
    this.#write("debug", args);
  }
  trace(...args: unknown[]): void {
    this.#write("trace", args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }
}

/** Routes with their own log level (the health probes) get the real child at once: its level decides. */
export const requestLoggerOnFirstUse: NonNullable<FastifyServerOptions["childLoggerFactory"]> = (
  logger,
  bindings,
  options,
) =>
  options.level === undefined
    ? (new RequestLogger(logger, bindings, options) as unknown as FastifyBaseLogger)
    : logger.child(bindings, options);
