// Builds the whole service from its inputs: buildApp({ config, store, clock })
// returns a ready Fastify instance and touches no process state, so tests
// build their own on an in-memory store and call inject(). Registration order
// is explicit: error handling, docs, then the routes.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { createGuards } from "./auth/guard.ts";
import { type Clock, createTokenService } from "./auth/tokens.ts";
import type { Config } from "./config.ts";
import { registerDocs } from "./docs.ts";
import { handleError, handleNotFound } from "./error-handler.ts";
import { meRoutes } from "./routes/me.ts";
import { tokenRoutes } from "./routes/token.ts";
import { userRoutes } from "./routes/users.ts";
import type { UserStore } from "./store/store.ts";
import { createValidatorCompiler } from "./validation.ts";

/** Our largest legitimate body is a sign-up of about 600 bytes. */
export const BODY_LIMIT_BYTES = 16 * 1024;

export interface AppOptions {
  config: Config;
  store: UserStore;
  clock?: Clock;
  /** Overrides the logger built from config.logLevel (tests capture logs through it). */
  logger?: FastifyServerOptions["logger"];
}

export async function buildApp({ config, store, clock = Date.now, logger }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: logger ?? {
      level: config.logLevel,
      redact: { paths: ["req.headers.authorization", "req.headers.cookie"], censor: "[redacted]" },
    },
    bodyLimit: BODY_LIMIT_BYTES,
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(createValidatorCompiler());
  app.decorateRequest("user", null);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);
  // JSON is the only body type outside the token endpoint; text/plain would otherwise parse.
  app.removeContentTypeParser("text/plain");

  await registerDocs(app);

  const tokens = createTokenService(config.signingSecret, clock);
  const guards = createGuards(tokens, store);
  await app.register(tokenRoutes, { store, tokens });
  await app.register(meRoutes, { store, guards });
  await app.register(userRoutes, { store, guards, signupOpen: config.signupOpen });

  await app.ready();
  return app;
}
