// What the branding tests share: real images made here (a PNG of one
// colour, and the first bytes of the other types), an admin's headers, and
// the brand's answer as the API gives it when nothing is set.
import { crc32, deflateSync } from "node:zlib";
import type { FastifyInstance } from "fastify";
import type { UserStore } from "../../src/store/store.ts";
import { bearer, signedInUser } from "../helpers.ts";

export const PASSWORD = "correct horse battery";

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A real PNG, `size` pixels square, of one colour. */
export function png(size = 8, rgb: [number, number, number] = [15, 118, 110]): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolour
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: size }, () => rgb).flat())]);
  const pixels = Buffer.concat(Array.from({ length: size }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(pixels)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** The first bytes of a GIF (enough for the signature check). */
export const GIF = Buffer.concat([Buffer.from("GIF89a", "latin1"), Buffer.alloc(32)]);

export async function admin(app: FastifyInstance, store: UserStore, email = "root@example.com") {
  const { token } = await signedInUser(app, store, email, PASSWORD, true);
  return bearer(token);
}

/** GET /branding when nothing is set (the settings' defaults). */
export const DEFAULT_BRANDING = {
  product_name: "User service",
  primary_color: "#1d4ed8",
  support_email: null,
  terms_url: null,
  privacy_url: null,
  logo_url: null,
  stylesheet_url: "/branding/brand.css?v=d139a669343e",
  sources: {
    product_name: "setting",
    primary_color: "setting",
    support_email: "setting",
    terms_url: "setting",
    privacy_url: "setting",
  },
};

export const sha20 = async (bytes: Buffer) => {
  const { createHash } = await import("node:crypto");
  return createHash("sha256").update(bytes).digest("hex").slice(0, 20);
};
