// The documentation's link check (npm run docs:links, part of npm test): every
// relative link and image in README.md and docs/**/*.md must name a file of
// the repository, and every #anchor a heading of its target as GitHub writes
// its id; no document may name a path outside the repository, since a person
// who clones it has only what is inside. No network: links to other sites are
// not followed (CI has none, and a site that is down is not our defect).
import { existsSync, globSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

export interface LinkProblem {
  /** The document, relative to the repository root. */
  file: string;
  line: number;
  target: string;
  reason: string;
}

const ROOT = resolve(import.meta.dirname, "..");

/** The documents checked: the front page and every page under docs/. */
export function documents(root: string = ROOT): string[] {
  return ["README.md", ...globSync("docs/**/*.md", { cwd: root }).sort()].filter((file) =>
    existsSync(join(root, file)),
  );
}

/**
 * The id GitHub gives a heading (github-slugger's rule): the rendered text lower-cased, every
 * character that is not a letter, mark, digit, connector (`_`), hyphen or space dropped, and each
 * space made a hyphen.
 */
export function githubSlug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** A heading's text as GitHub renders it: links and images to their text, code spans and emphasis unwrapped, tags gone. */
export function headingText(source: string): string {
  const spans: string[] = [];
  const protectedText = source.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (_match, _ticks, code: string) => {
    spans.push(code.trim());
    return `\uE000${spans.length - 1}\uE000`;
  });
  const plain = protectedText
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/(^|[^\p{L}\p{N}])_+(?=\S)|(?<=\S)_+(?=[^\p{L}\p{N}]|$)/gu, "$1");
  return plain.replace(/\uE000(\d+)\uE000/g, (_match, index: string) => spans[Number(index)] ?? "").trim();
}

interface Line {
  number: number;
  text: string;
  /** Inside a fenced code block: no links or headings there, only text. */
  code: boolean;
}

function lines(markdown: string): Line[] {
  const out: Line[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((text, index) => {
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(text);
    if (fence === undefined && opening) {
      fence = opening[1];
      out.push({ number: index + 1, text, code: true });
      return;
    }
    if (fence !== undefined) {
      const closing = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(text);
      if (closing?.[1] && closing[1][0] === fence[0] && closing[1].length >= fence.length) fence = undefined;
      out.push({ number: index + 1, text, code: true });
      return;
    }
    out.push({ number: index + 1, text, code: false });
  });
  return out;
}

/** Every id a link may name in this document: its headings' (deduplicated as GitHub does) and explicit `<a id>`s. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const occurrences = new Map<string, number>();
  for (const line of lines(markdown)) {
    if (line.code) continue;
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line.text);
    if (heading) {
      const original = githubSlug(headingText(heading[1] ?? ""));
      let slug = original;
      while (occurrences.has(slug)) {
        const count = (occurrences.get(original) ?? 0) + 1;
        occurrences.set(original, count);
        slug = `${original}-${count}`;
      }
      occurrences.set(slug, 0);
      anchors.add(slug);
    }
    for (const match of line.text.matchAll(/<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"/g)) anchors.add(match[1] as string);
  }
  return anchors;
}

/** The text of a line without its code spans, where nothing is a link. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[\s\S]*?[^`]\1(?!`)/g, (span) => " ".repeat(span.length));
}

/** The targets of a line's links and images: inline, reference definitions and HTML href/src. */
function targetsOf(text: string): string[] {
  const prose = withoutCodeSpans(text);
  const targets: string[] = [];
  for (const match of prose.matchAll(/\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+"[^"]*")?\s*\)/g))
    targets.push((match[1] as string).replace(/^<|>$/g, ""));
  const definition = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(prose);
  if (definition) targets.push((definition[1] as string).replace(/^<|>$/g, ""));
  for (const match of prose.matchAll(/<(?:a|img)\s[^>]*?(?:href|src)="([^"]*)"/g)) targets.push(match[1] as string);
  return targets;
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/** Checks the documents (paths relative to root) and answers every problem found, in order. */
export function checkLinks(root: string = ROOT, files: string[] = documents(root)): LinkProblem[] {
  const problems: LinkProblem[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsAt = (path: string) => {
    let anchors = anchorCache.get(path);
    if (!anchors) {
      anchors = anchorsOf(readFileSync(path, "utf8"));
      anchorCache.set(path, anchors);
    }
    return anchors;
  };

  for (const file of files) {
    const path = join(root, file);
    const base = dirname(path);
    for (const line of lines(readFileSync(path, "utf8"))) {
      const reported = new Set<string>();
      const problem = (target: string, reason: string) => {
        if (reported.has(`${target} ${reason}`)) return; // a path both written and linked on one line
        reported.add(`${target} ${reason}`);
        problems.push({ file, line: line.number, target, reason });
      };
      // A path that climbs out of the repository, linked or only written (`../shared/spec.md`).
      for (const match of line.text.matchAll(/(?<![\w./-])((?:\.\.\/)+[\w@.-][\w@./-]*)/g)) {
        const named = match[1] as string;
        if (!inside(root, resolve(base, named))) problem(named, "names a path outside the repository");
      }
      if (line.code) continue;
      for (const target of targetsOf(line.text)) {
        if (target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // other sites, mail
        if (target.startsWith("/")) {
          problem(target, "an absolute path: write the link relative to this document");
          continue;
        }
        const hash = target.indexOf("#");
        const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
        const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
        const resolved = pathPart === "" ? path : resolve(base, pathPart);
        if (!inside(root, resolved)) {
          problem(target, "names a path outside the repository");
          continue;
        }
        if (!existsSync(resolved)) {
          problem(target, `no such file: ${relative(root, resolved)}`);
          continue;
        }
        if (anchor === undefined || anchor === "") continue;
        if (!resolved.endsWith(".md") || statSync(resolved).isDirectory()) continue; // line anchors of code files
        if (!anchorsAt(resolved).has(anchor))
          problem(target, `no heading with the id "${anchor}" in ${relative(root, resolved)}`);
      }
    }
  }
  return problems;
}

if (import.meta.main) {
  const files = documents();
  const problems = checkLinks(ROOT, files);
  for (const { file, line, target, reason } of problems) console.error(`${file}:${line}: ${target}: ${reason}`);
  if (problems.length > 0) {
    console.error(`docs:links: ${problems.length} broken link(s) in ${files.length} documents`);
    process.exit(1);
  }
  console.log(`docs:links: every relative link and anchor resolves in ${files.length} documents`);
}
