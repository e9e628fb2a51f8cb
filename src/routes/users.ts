// POST /users: open sign-up. The e-mail is normalised before validation so
// " Ada@Example.com" signs up as "ada@example.com".
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { hashPassword } from "../auth/passwords.ts";
import { EMAIL_TAKEN } from "../errors.ts";
import { errorResponse, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, UserCreate, UserOut } from "../schemas.ts";
import type { UserStore } from "../store/store.ts";
import { normalizeEmail } from "../users/email.ts";
import { toUserOut } from "../users/present.ts";

export interface UserRouteOptions {
  store: UserStore;
}

export const userRoutes: FastifyPluginAsyncTypebox<UserRouteOptions> = async (app, { store }) => {
  app.post(
    "/users",
    {
      preValidation: [normalizeEmailField],
      schema: {
        tags: ["users"],
        summary: "Sign up",
        description: `Creates a user from an e-mail and a password (${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters). Open to anyone.`,
        body: UserCreate,
        response: {
          201: UserOut,
          409: errorResponse("The e-mail is already taken.", EMAIL_TAKEN),
          415: errorResponse("The body is not JSON.", "Unsupported Media Type: application/x-www-form-urlencoded"),
          422: errorResponse(
            "The e-mail or password is invalid.",
            "body.password: must NOT have fewer than 8 characters",
          ),
        },
      },
    },
    async function signUp(request, reply) {
      const { email, password } = request.body;
      const user = await store.create({ email, hashedPassword: await hashPassword(password) });
      reply.code(201);
      return toUserOut(user);
    },
  );
};

async function normalizeEmailField(request: { body: unknown }): Promise<void> {
  const body = request.body as { email?: unknown } | null;
  if (body && typeof body === "object" && typeof body.email === "string") body.email = normalizeEmail(body.email);
}
