// A released migration is never edited: a database that applied it must get from this release
// exactly the schema it would have got then, and one that has not yet must get the same. The SQL
// each dialect applies is pinned here by its SHA-256 (first 16 hex digits), as of the release that
// wrote each migration in both dialects' own text; a new migration adds a line.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { migrations } from "../src/store/migrations.ts";

const RELEASED: [version: number, sqlite: string, postgres: string][] = [
  [1, "023d1e61649e3bd4", "1d52a28437385940"],
  [2, "bbd97021aa796168", "23155593b614eb0a"],
  [3, "9285330b84f4d3f0", "7cb77495f4158193"],
  [4, "89fa04cf5fef2e27", "1a2e4fcfd8c5c1ec"],
  [5, "942fe500d974a628", "bad29530d8dcbd77"],
  [6, "35fb9b52616785a9", "f0e6628e7bbb4b62"],
  [7, "76ddbf5e6b27e103", "5ad1f49cf03d7ae8"],
  [8, "6e8d3a11e6c2cf2a", "6e8d3a11e6c2cf2a"],
  [9, "b4f8122966b98b39", "b4f8122966b98b39"],
];

const digest = (sql: string) => createHash("sha256").update(sql).digest("hex").slice(0, 16);

test("released migrations keep their numbers and, in both dialects, their SQL to the byte", () => {
  const released = new Set(RELEASED.map(([version]) => version));
  assert.deepEqual(
    RELEASED.map(([version]) => {
      const migration = migrations.find((candidate) => candidate.version === version);
      return migration && [version, digest(migration.sqlite), digest(migration.postgres)];
    }),
    RELEASED,
  );
  const versions = migrations.map((migration) => migration.version);
  assert.deepEqual(
    versions,
    [...new Set(versions)].sort((a, b) => a - b),
    "unique, in order",
  );
  assert.ok(
    versions.every((version) => released.has(version) || version > Math.max(...released)),
    "new ones come after",
  );
});
