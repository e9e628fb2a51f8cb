// An uploaded logo (issue 37): the raw image as the request's body, one of
// four raster types, whose first bytes must be that type's signature (a file
// of another kind, or mislabelled, is refused), at most 256 KiB. SVG is
// refused: it is a document that can carry script. The logo is named by the
// prefix of its SHA-256, so its URL changes when it changes.
import { createHash } from "node:crypto";
import type { BrandLogo } from "../store/store.ts";

export const MAX_LOGO_BYTES = 256 * 1024;

/** The types accepted, their file extension and how their bytes begin. */
const TYPES: Record<string, { ext: string; matches: (bytes: Buffer) => boolean }> = {
  "image/png": {
    ext: "png",
    matches: (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  },
  "image/jpeg": { ext: "jpg", matches: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  "image/webp": {
    ext: "webp",
    matches: (b) => b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP",
  },
  "image/gif": { ext: "gif", matches: (b) => /^GIF8[79]a$/.test(b.subarray(0, 6).toString("latin1")) },
};

export const LOGO_TYPES = Object.keys(TYPES);

/** The extension of a stored logo's URL. */
export const logoExtension = (type: string) => TYPES[type]?.ext ?? "img";

/** The media type of a Content-Type header: lower-cased, without parameters. */
export const mediaType = (header: string | undefined) => (header ?? "").split(";")[0]?.trim().toLowerCase() ?? "";

/**
 * The logo to store, or why not: `status` 415 for a body that is not declared an image at all, 422 for
 * an image refused (SVG, another image type, too large, empty, bytes not of the declared type).
 */
export function checkLogo(
  contentType: string | undefined,
  body: Buffer,
): { ok: BrandLogo } | { status: 415 | 422; detail: string } {
  const type = mediaType(contentType);
  if (!type.startsWith("image/"))
    return {
      status: 415,
      detail: `The logo must be sent as the raw image, with Content-Type ${LOGO_TYPES.join(", ")}`,
    };
  if (type === "image/svg+xml")
    return { status: 422, detail: "SVG logos are refused (an SVG can carry script): send a PNG, JPEG, WebP or GIF" };
  const known = TYPES[type];
  if (known === undefined)
    return { status: 422, detail: `Logo type ${type} is not accepted: send one of ${LOGO_TYPES.join(", ")}` };
  if (body.length === 0) return { status: 422, detail: "The logo is empty" };
  if (body.length > MAX_LOGO_BYTES)
    return {
      status: 422,
      detail: `The logo is ${Math.ceil(body.length / 1024)} KiB; at most ${MAX_LOGO_BYTES / 1024} KiB is accepted`,
    };
  if (!known.matches(body))
    return { status: 422, detail: `The logo's bytes are not a ${type.slice("image/".length).toUpperCase()} image` };
  const hash = createHash("sha256").update(body).digest("hex").slice(0, 20);
  return { ok: { data: body.toString("base64"), type, hash } };
}
