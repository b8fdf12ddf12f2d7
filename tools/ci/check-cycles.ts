/**
 * `npm run lint`'s cycle check: no import cycle between the modules of src/, type-only imports
 * included (a cycle of types is still two modules that cannot change apart). The direction between
 * folders is eslint.config.mjs's layer rule; this catches the cycles inside a folder or a layer.
 * Prints every cycle found and exits 1, or exits 0 in silence.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SRC = resolve(__dirname, '..', 'src');
const IMPORT = /^\s*(?:import|export)\b[^;]*?\bfrom\s*['"](\.{1,2}\/[^'"]*)['"]/gms;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The file a relative specifier names: `x.ts`, or `x/index.ts`. */
function resolveModule(from: string, specifier: string, known: Set<string>): string | undefined {
  const base = resolve(dirname(from), specifier);
  return [`${base}.ts`, join(base, 'index.ts')].find((candidate) => known.has(candidate));
}

const files = sourceFiles(SRC);
const known = new Set(files);
const edges = new Map<string, string[]>();
for (const file of files) {
  const targets = [...readFileSync(file, 'utf8').matchAll(IMPORT)]
    .map((match) => resolveModule(file, match[1]!, known))
    .filter((target): target is string => target !== undefined);
  edges.set(file, [...new Set(targets)]);
}

// Tarjan's strongly connected components: every component of more than one module is a cycle.
let index = 0;
const indexOf = new Map<string, number>();
const lowLink = new Map<string, number>();
const stack: string[] = [];
const onStack = new Set<string>();
const cycles: string[][] = [];
function visit(node: string) {
  indexOf.set(node, index);
  lowLink.set(node, index);
  index += 1;
  stack.push(node);
  onStack.add(node);
  for (const next of edges.get(node) ?? []) {
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
    if (component.length > 1 || edges.get(node)!.includes(node)) cycles.push(component);
  }
}
for (const file of files) if (!indexOf.has(file)) visit(file);

if (cycles.length) {
  for (const cycle of cycles) {
    const names = cycle.map((file) => relative(resolve(SRC, '..'), file)).sort();
    console.error(`import cycle between ${names.join(', ')}`);
  }
  console.error(`${cycles.length} import cycle(s) in src/: break each (docs/architecture.md, "Layers").`);
  process.exit(1);
}
