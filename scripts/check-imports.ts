// Fails when src/ has an import circle, and prints each circle found. Walks
// every relative import of every module under src/ (static, re-exports,
// dynamic import(), and `import type` too: a circle of type imports costs
// nothing at run time, but two modules that need each other's words are one
// idea split in two, or share a word that belongs lower down). Packages
// (anything not starting with ".") are not followed. TypeScript's own
// pre-processor reads the imports, so comments and strings never count.
// Run by `npm test` before the tests: node scripts/check-imports.ts [root].
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(process.argv[2] ?? join(import.meta.dirname, "..", "src"));
const MODULE = /\.(ts|mts|mjs|js)$/;

function modulesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return modulesUnder(path);
    return MODULE.test(name) && !name.endsWith(".d.ts") && !name.endsWith(".d.mts") ? [path] : [];
  });
}

/** The modules `file` imports, as absolute paths: relative specifiers only, resolved as Node does (exact file). */
function importsOf(file: string, known: Set<string>): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  const targets = new Set<string>();
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith(".")) continue;
    const target = resolve(dirname(file), fileName);
    if (known.has(target)) targets.add(target);
  }
  return [...targets];
}

const files = modulesUnder(ROOT).sort();
const known = new Set(files);
const graph = new Map(files.map((file) => [file, importsOf(file, known)]));

/** Tarjan's strongly connected components: every group of modules that reach one another. */
function circles(): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  function visit(node: string): void {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
    }
    if (low.get(node) === index.get(node)) {
      const group: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      if (group.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(group);
    }
  }
  for (const file of files) if (!index.has(file)) visit(file);
  return found;
}

/** One concrete circle inside a group: the shortest way from its first module back to itself. */
function pathWithin(group: string[]): string[] {
  const members = new Set(group);
  const start = [...group].sort()[0] as string;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift() as string;
    for (const next of graph.get(node) ?? []) {
      if (!members.has(next)) continue;
      if (next === start) {
        const path = [start];
        for (let at = node; at !== start; at = previous.get(at) as string) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start, start];
}

const found = circles();
const name = (file: string) => relative(ROOT, file);
if (found.length === 0) {
  console.log(`No import circles among ${files.length} modules under ${relative(process.cwd(), ROOT) || "."}.`);
} else {
  console.error(`Import circles under ${relative(process.cwd(), ROOT) || "."} (${found.length}):`);
  for (const group of found) {
    console.error(`  ${pathWithin(group).map(name).join(" -> ")}`);
    if (group.length > 2) console.error(`    (the circle's group: ${group.map(name).sort().join(", ")})`);
  }
  process.exitCode = 1;
}
