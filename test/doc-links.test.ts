// The documentation's link check (scripts/check-links.ts, run by npm test as
// `npm run docs:links`): GitHub's heading ids, and each kind of broken link it
// must report, on documents written here into a scratch directory.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, test } from "node:test";
import { anchorsOf, checkLinks, githubSlug, headingText } from "../scripts/check-links.ts";
import { scratchDir } from "./process.ts";

function repository(t: Parameters<typeof scratchDir>[0], files: Record<string, string>): string {
  const root = scratchDir(t);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe("the documentation's link check", () => {
  test("heading ids follow GitHub's rule", () => {
    const id = (heading: string) => githubSlug(headingText(heading));
    assert.equal(id("Who may present which token where"), "who-may-present-which-token-where");
    assert.equal(
      id("A second factor: authenticator apps and recovery codes"),
      "a-second-factor-authenticator-apps-and-recovery-codes",
    );
    assert.equal(id("`POST /auth/token`"), "post-authtoken");
    assert.equal(
      id("PostgreSQL connections dropped (`pg_terminate_backend`)"),
      "postgresql-connections-dropped-pg_terminate_backend",
    );
    assert.equal(id("The token check's user cache"), "the-token-checks-user-cache");
    assert.equal(id("[Linked](other.md) and **bold**"), "linked-and-bold");
    assert.equal(id("Why _this_ works"), "why-this-works");
    assert.equal(id("Two — dashes"), "two--dashes");
  });

  test("repeated headings are numbered, headings in code are not headings, explicit anchors count", () => {
    const anchors = anchorsOf('# Setup\n## Setup\n```sh\n# Setup\n```\n### Setup\n<a id="here"></a>\n');
    assert.deepEqual([...anchors], ["setup", "setup-1", "setup-2", "here"]);
  });

  test("links that resolve pass: files, folders, anchors in this and other documents, other sites", (t) => {
    const root = repository(t, {
      "README.md":
        "# Front\n\n[Guide](docs/guide.md#the-part), [self](#front), [folder](docs/), ![img](docs/a.png), " +
        "[site](https://example.com/x.md#nope), [code](src/x.ts#L3), `[not a link](nowhere.md)`\n",
      "docs/guide.md": "# Guide\n\n## The part\n\n[Back](../README.md#front)\n\n```md\n[fenced](missing.md)\n```\n",
      "docs/a.png": "",
      "src/x.ts": "",
    });
    assert.deepEqual(checkLinks(root, ["README.md", "docs/guide.md"]), []);
  });

  test("every broken kind is reported with its document and line", (t) => {
    const root = repository(t, {
      "README.md": "# Front\n\n[gone](docs/gone.md)\n[anchor](docs/guide.md#no-such-part)\n[self](#nowhere)\n",
      "docs/guide.md":
        "# Guide\n\nThe spec is `../../shared/spec.md`.\n[up](../../outside.md)\n[abs](/docs/guide.md)\n",
    });
    const problems = checkLinks(root, ["README.md", "docs/guide.md"]).map(
      ({ file, line, target, reason }) => `${file}:${line} ${target} ${reason.split(":")[0]}`,
    );
    assert.deepEqual(problems, [
      "README.md:3 docs/gone.md no such file",
      'README.md:4 docs/guide.md#no-such-part no heading with the id "no-such-part" in docs/guide.md',
      'README.md:5 #nowhere no heading with the id "nowhere" in README.md',
      "docs/guide.md:3 ../../shared/spec.md names a path outside the repository",
      "docs/guide.md:4 ../../outside.md names a path outside the repository",
      "docs/guide.md:5 /docs/guide.md an absolute path",
    ]);
  });
});
