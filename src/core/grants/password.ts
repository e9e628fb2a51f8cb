// The spec's grant: OAuth 2.0's password grant (RFC 6749 section 4.3.2),
// exactly as the spec lays it out: `username` carries the e-mail; the same
// 401 for an unknown e-mail and a wrong password. For an account with a
// second factor (issue 14), a right password answers 403 `mfa_required`
// with a single-use `mfa_token` instead of tokens (see mfa-*.ts).
import type { FastifyRequest } from "fastify";
import { proofKeyOf } from "../../dpop/request-key.ts";
import { INCORRECT_EMAIL_OR_PASSWORD, PasswordHashQueueFull, unauthorized } from "../../errors.ts";
import type { UserRecord } from "../../store/store.ts";
import {
  type Grant,
  type GrantDeps,
  refuseUnverified,
  required,
  secondFactorChallenge,
  signIn,
  userTokens,
} from "./grant.ts";

export { MFA_REQUIRED } from "./grant.ts";

export function passwordGrant(deps: GrantDeps): Grant {
  const { store, passwords, limits, audit, tokens } = deps;

  /** Checks e-mail and password, with the brute-force limits and the equal-cost rule for unknown e-mails. */
  async function checkPassword(request: FastifyRequest, username: string, password: string): Promise<UserRecord> {
    await limits.checkLogin(username, request.ip);
    const user = await store.findByEmail(username);
    // An account at its second-factor limit gets the second step's 429 here too, instead of a fresh
    // mfa_token; checked before the password, so the answer tells nothing about the password.
    if (user) await limits.checkSecondFactor(user.id);
    // An unknown e-mail still pays for one hash verify, so timing does not reveal which accounts exist.
    const verified = user
      ? await passwords.verify(user.hashedPassword, password)
      : await passwords.verifyDummy(password);
    // An inactive account answers exactly like a wrong password: nothing tells "disabled" from "unknown".
    if (!user || !verified || !user.isActive) {
      await limits.recordLoginFailure(username, request.ip);
      await audit.record("login", user?.id ?? null, user && verified ? "refused_inactive" : "failure", request.ip);
      throw unauthorized(INCORRECT_EMAIL_OR_PASSWORD);
    }
    await limits.recordLoginSuccess(username, request.ip);
    // Only after the password proved correct, so this distinct answer enumerates nothing.
    await refuseUnverified(deps, request, user);
    // Hashes made with older parameters or imported from another system are upgraded now, the
    // only moment the plain password is at hand; before the session is written, so that nothing
    // can fail after that commit. With the hash queue full the upgrade waits for a later login:
    // this one has proved its password and is not refused for an optional second hash.
    if (passwords.needsRehash(user.hashedPassword)) {
      const upgraded = await passwords.hash(password).catch((error: unknown) => {
        if (error instanceof PasswordHashQueueFull) return undefined;
        throw error;
      });
      if (upgraded !== undefined) await store.update(user.id, { hashedPassword: upgraded });
    }
    return user;
  }

  return {
    type: "password",
    parameters: ["username", "password"],
    client: "ignored",
    async handle({ request, reply }) {
      const { username, password } = request.body;
      if (username === undefined) throw required("username");
      if (password === undefined) throw required("password");
      const user = await checkPassword(request, username, password);
      const challenge = await secondFactorChallenge(deps, request, reply, user);
      if (challenge) return challenge;
      // The session, its refresh token and the login event commit together; the answer is built
      // from what was written, with no read after the commit.
      const issued = await signIn(deps, request, user);
      return userTokens(tokens, user, issued, proofKeyOf(request));
    },
  };
}
