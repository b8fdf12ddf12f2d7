/**
 * `npm run lint`'s import check over the whole repository (src/, testkit/, tools/, test/, bin/):
 *
 * 1. No import cycle between modules, type-only imports included (a cycle of types is still two
 *    modules that cannot change apart), and dynamic imports (`import('…')`, `require('…')`) too:
 *    a cycle through a lazy import is still a cycle.
 * 2. No upward arrow between top-level folders (docs/architecture.md, "The house"):
 *    src ← testkit ← tools/<tool>, test. src/ imports only src/; testkit/ only src/ and itself;
 *    tools/<tool>/ src/, testkit/ and its own folder; test/ src/, testkit/ and itself; bin/ src/.
 * 3. No two rooms of src/ (`src/app/`, `src/temporal/`, …, `src/client.ts`) importing each other's
 *    values: eslint lets rooms of one layer import each other, this keeps the arrow between them one
 *    way. Type-only imports are left out here (workflows name their activities' types): they cost nothing at run time.
 * 4. Nothing the image ships loads `src/stack/`: the image drops dist/stack/ (Dockerfile), so a
 *    value import of it from anywhere else in src/ would fail every command that reaches it. The
 *    only ones allowed are the developer tools' commands, each through `importDevTool`
 *    (src/cli/errors.ts), which refuses in one sentence where the tool is not installed.
 *
 * eslint.config.mjs says the same with patterns on the specifiers; this resolves each one to a file.
 * Prints every cycle and upward arrow found and exits 1, or exits 0 in silence.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
const TOP_LEVEL = ['src', 'testkit', 'tools', 'test', 'bin'];
const EXTENSIONS = ['.ts', '.mjs', '.js'];
/** `import type … from`, `export type … from`: gone at run time. */
const TYPE_ONLY = /^\s*(?:import|export)\s+type\b[^;]*?\bfrom\s*['"](\.{1,2}\/[^'"]*)['"]/gms;
/** Static `import … from`, `export … from`, `import '…'`; dynamic `import('…')`, `require('…')`. */
const SPECIFIERS = [
  /^\s*(?:import|export)\b[^;]*?\bfrom\s*['"](\.{1,2}\/[^'"]*)['"]/gms,
  /^\s*import\s*['"](\.{1,2}\/[^'"]*)['"]/gm,
  /\b(?:import|require)\s*\(\s*['"](\.{1,2}\/[^'"]*)['"]\s*\)/g,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules') return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return EXTENSIONS.some((extension) => path.endsWith(extension)) ? [path] : [];
  });
}

/** The file a relative specifier names: itself, `x.ts`, `x/index.ts`, or `x.ts` for `x.js`. */
function resolveModule(from: string, specifier: string, known: Set<string>): string | undefined {
  const base = resolve(dirname(from), specifier);
  const candidates = [base, `${base}.ts`, `${base}.mjs`, join(base, 'index.ts')];
  if (base.endsWith('.js')) candidates.unshift(`${base.slice(0, -'.js'.length)}.ts`);
  return candidates.find((candidate) => known.has(candidate));
}

/** A file's place in the house: `src`, `testkit`, `tools/<tool>`, `test` or `bin`. */
function area(file: string): string {
  const [top, second] = relative(ROOT, file).split(sep);
  return top === 'tools' ? `tools/${second}` : top!;
}

/**
 * A src/ file's room: `src/<folder>`, or `src/<file>.ts` for a file at the top of src/. The providers'
 * configuration (src/providers/registry-configuration.ts and each provider's config.ts: variables and their
 * cross-checks, importing only domain/; the HMAC providers' specs, data it builds theirs from, with
 * their table, hmac-providers.ts) is a room of its own, beneath src/config/ that reads it, so
 * the configuration does not sit on the adapters' helpers (src/lib/, which reads the configuration).
 */
function room(file: string): string | undefined {
  const parts = relative(ROOT, file).split(sep);
  if (parts[0] !== 'src') return undefined;
  if (
    /^src\/providers\/(registry-configuration\.ts|hmac-providers\.ts|[^/]+\/(config|spec)\.ts)$/.test(
      parts.join('/'),
    )
  ) {
    return 'src/providers/registry-configuration';
  }
  return `src/${parts[1]}`;
}

/** Whether an import from area `from` to area `to` points down (or stays in its folder). */
function allowed(from: string, to: string): boolean {
  if (from === to || to === 'src') return true;
  if (from === 'test' || from.startsWith('tools/')) return to === 'testkit';
  return false;
}

const files = TOP_LEVEL.map((top) => join(ROOT, top))
  .filter((dir) => existsSync(dir))
  .flatMap(sourceFiles);
const known = new Set(files);
const edges = new Map<string, string[]>();
/** The same imports without the type-only ones: what a module loads when it runs. */
const valueEdges = new Map<string, string[]>();
const targetsIn = (file: string, text: string) => [
  ...new Set(
    SPECIFIERS.flatMap((pattern) => [...text.matchAll(pattern)])
      .map((match) => resolveModule(file, match[1]!, known))
      .filter((target): target is string => target !== undefined),
  ),
];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  edges.set(file, targetsIn(file, text));
  valueEdges.set(file, targetsIn(file, text.replace(TYPE_ONLY, '')));
}

/** Tarjan's strongly connected components: every component of more than one node is a cycle. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string) => {
    indexOf.set(node, index);
    lowLink.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indexOf.has(next)) {
        visit(next);
        lowLink.set(node, Math.min(lowLink.get(node)!, lowLink.get(next)!));
      } else if (onStack.has(next)) {
        lowLink.set(node, Math.min(lowLink.get(node)!, indexOf.get(next)!));
      }
    }
    if (lowLink.get(node) === indexOf.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || graph.get(node)!.includes(node)) cycles.push(component);
    }
  };
  for (const node of graph.keys()) if (!indexOf.has(node)) visit(node);
  return cycles;
}

const name = (file: string) => relative(ROOT, file);
const moduleCycles = cyclesOf(edges);
const upward = [...edges].flatMap(([file, targets]) =>
  targets.filter((target) => !allowed(area(file), area(target))).map((target) => ({ file, target })),
);
// The same graph between folders: a circle there is two folders that cannot change apart.
const folderEdges = new Map<string, string[]>();
for (const [file, targets] of edges) {
  const from = area(file);
  const to = targets.map(area).filter((target) => target !== from);
  folderEdges.set(from, [...new Set([...(folderEdges.get(from) ?? []), ...to])]);
}
const folderCycles = cyclesOf(folderEdges);
// Between the rooms of src/, values only.
const roomEdges = new Map<string, string[]>();
for (const [file, targets] of valueEdges) {
  const from = room(file);
  if (from === undefined) continue;
  const to = targets.map(room).filter((target): target is string => target !== undefined && target !== from);
  roomEdges.set(from, [...new Set([...(roomEdges.get(from) ?? []), ...to])]);
}
const roomCycles = cyclesOf(roomEdges);
// Into src/stack/ from the rest of src/, values only: the developer tools' commands and nothing else.
const DEV_TOOL_IMPORTS = new Map([
  ['src/cli/commands/roles.ts', 'src/stack/dev-stack.ts'],
  ['src/cli/commands/simulate.ts', 'src/stack/simulate.ts'],
  ['src/cli/commands/example.ts', 'src/stack/example.ts'],
]);
const stackImports = [...valueEdges].flatMap(([file, targets]) =>
  room(file) === undefined || room(file) === 'src/stack'
    ? []
    : targets
        .filter((target) => room(target) === 'src/stack' && DEV_TOOL_IMPORTS.get(name(file)) !== name(target))
        .map((target) => ({ file, target })),
);

for (const cycle of moduleCycles) console.error(`import cycle between ${cycle.map(name).sort().join(', ')}`);
for (const cycle of folderCycles) console.error(`folders importing each other: ${cycle.sort().join(', ')}`);
for (const cycle of roomCycles)
  console.error(`rooms of src/ importing each other: ${cycle.sort().join(', ')}`);
for (const { file, target } of stackImports) {
  console.error(
    `${name(file)} loads ${name(target)}, which the image does not ship (dist/stack/ is dropped): ` +
      'move what it needs out of src/stack/, or make it a developer tool (importDevTool)',
  );
}
for (const { file, target } of upward) {
  console.error(`upward arrow ${area(file)} → ${area(target)}: ${name(file)} imports ${name(target)}`);
}
if (moduleCycles.length || folderCycles.length || roomCycles.length || upward.length || stackImports.length) {
  console.error(
    `${moduleCycles.length} import cycle(s), ${folderCycles.length} circle(s) between folders, ` +
      `${roomCycles.length} circle(s) between rooms of src/, ${upward.length} upward arrow(s), ` +
      `${stackImports.length} import(s) of src/stack/ the image would not find: ` +
      'break each (docs/architecture.md, "The house").',
  );
  process.exit(1);
}
