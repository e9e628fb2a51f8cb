// The ceiling for GET /me: a bare Fastify server on the same Node whose
// GET /me returns a constant user, with no logging, no token check and no
// database. Listens on PORT.
import Fastify from "fastify";

const USER = {
  id: "0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f",
  email: "bench@example.com",
  full_name: null,
  is_active: true,
  is_admin: false,
  created_at: "2026-11-22T16:40:03.123Z",
  updated_at: "2026-11-22T16:40:03.123Z",
};

const app = Fastify({ logger: false });
app.get("/me", async () => USER);
await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
process.on("SIGTERM", () => void app.close().then(() => process.exit(0)));
