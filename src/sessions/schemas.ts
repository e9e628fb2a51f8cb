// The caller's sessions as the API shows them: one page of live sessions
// (newest first, by cursor), and the id of the one to end.
import { type Static, Type } from "typebox";
import { USERS_PAGE_DEFAULT, USERS_PAGE_MAX } from "../users/schemas.ts";

export const SessionOut = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    created_at: Type.String({ format: "date-time", description: "When the user logged in." }),
    last_used_at: Type.String({ format: "date-time", description: "The last refresh (or the login)." }),
    expires_at: Type.String({ format: "date-time", description: "The absolute end of the session." }),
    client_address: Type.Union([Type.String(), Type.Null()], { description: "Address of the last login or refresh." }),
    user_agent: Type.Union([Type.String(), Type.Null()], { description: "User-Agent of the last login or refresh." }),
    current: Type.Boolean({ description: "True for the session of the access token making this call." }),
  },
  { $id: "SessionOut", description: "A signed-in session: one chain of refresh tokens." },
);
export const SessionListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: USERS_PAGE_MAX, default: USERS_PAGE_DEFAULT, description: "Page size." }),
    ),
    cursor: Type.Optional(Type.String({ format: "uuid", description: "The `next_cursor` of the previous page." })),
  },
  { additionalProperties: false },
);
export type SessionListQuery = Static<typeof SessionListQuery>;
export const SessionList = Type.Object(
  {
    items: Type.Array(SessionOut),
    next_cursor: Type.Union([Type.String({ format: "uuid" }), Type.Null()], {
      description: "Pass as `cursor` for the next page; null on the last page.",
    }),
    next: Type.Union([Type.String(), Type.Null()], {
      description: "The path and query of the next page; null on the last page.",
      examples: ["/me/sessions?limit=20&cursor=0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f"],
    }),
  },
  { $id: "SessionList", description: "One page of your live sessions, newest first." },
);
export const SessionIdParams = Type.Object({ id: Type.String({ format: "uuid" }) });
