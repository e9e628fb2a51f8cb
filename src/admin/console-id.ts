// The admin console's client_id (issue 35), in a module of its own that
// imports nothing, so that the OpenID Connect code can name the console's
// client (its exact redirect URI, its first-party tokens) without an import
// circle with src/admin/.

/** Fixed, so that instances starting together register one client, not two. */
export const CONSOLE_CLIENT_ID = "00000000-0000-7000-8000-000000000035";
