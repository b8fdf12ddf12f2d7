/**
 * The workflow bundle preloads settle's workflow modules (src/worker-runtime/workflow-bundle.ts): each
 * is evaluated once per worker thread and shared by every run that thread executes. A value a module
 * keeps at its top level is then seen by every run: a counter, a cache of one run's data or a list a
 * run appends to would leak from one run into the next, and a replay would no longer see what the
 * original run saw. What the modules export the SDK deep-freezes; what they do not export it cannot.
 *
 * So every module the workflows load, followed from src/workflows/index.ts (and from the tracing
 * interceptors a traced worker's bundle preloads with them) through its value imports (a type-only
 * import loads nothing), keeps at its top level only `const` bindings, and a mutable collection only
 * where it is listed below with why sharing it is safe.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { PROJECT_ROOT } from '../../src/lib/paths';

const ENTRIES = ['src/workflows/index.ts', 'src/workflows/tracing-interceptors.ts'].map((path) =>
  join(PROJECT_ROOT, path),
);

/** Module-scope collections shared by every run of a worker thread, and why that is safe. */
const SHARED_ON_PURPOSE: Record<string, string> = {
  'src/domain/money.ts ISO_MINOR_DIGITS':
    'a constant table: built once from the ISO 4217 data when the module loads, never written after',
};

/** The source files a module loads at run time: its relative value imports and re-exports. */
function valueImports(file: string, source: ts.SourceFile): string[] {
  const found: string[] = [];
  for (const statement of source.statements) {
    let specifier: ts.Expression | undefined;
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      // `import type`, or only type specifiers, load nothing at run time.
      if (clause?.isTypeOnly) continue;
      const bindings = clause?.namedBindings;
      if (
        clause &&
        !clause.name &&
        bindings &&
        ts.isNamedImports(bindings) &&
        bindings.elements.length > 0 &&
        bindings.elements.every((element) => element.isTypeOnly)
      ) {
        continue;
      }
      specifier = statement.moduleSpecifier;
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier && !statement.isTypeOnly) {
      specifier = statement.moduleSpecifier;
    }
    if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) continue;
    const base = resolve(dirname(file), specifier.text);
    const target = [`${base}.ts`, join(base, 'index.ts')].find((path) => existsSync(path));
    assert.ok(target, `${relative(PROJECT_ROOT, file)} imports ${specifier.text}, which has no .ts source`);
    found.push(target);
  }
  return found;
}

function workflowModules(): Map<string, ts.SourceFile> {
  const modules = new Map<string, ts.SourceFile>();
  const pending = [...ENTRIES];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (modules.has(file)) continue;
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    modules.set(file, source);
    pending.push(...valueImports(file, source));
  }
  return modules;
}

function isMutableCollection(initializer: ts.Expression | undefined): boolean {
  if (!initializer || !ts.isNewExpression(initializer)) return false;
  return /^(Map|Set|WeakMap|WeakSet|Array)$/.test(initializer.expression.getText());
}

test('the modules the workflow bundle shares between runs keep no state a run could write', () => {
  const modules = workflowModules();
  // The walk reaches the workflows and the domain modules they use, not only the entry.
  const names = [...modules.keys()].map((file) => relative(PROJECT_ROOT, file));
  for (const expected of [
    'src/workflows/payment.ts',
    'src/workflows/search-attributes.ts',
    'src/domain/outbox.ts',
    'src/workflows/tracing-interceptors.ts',
  ]) {
    assert.ok(names.includes(expected), `the walk from the preloaded modules did not reach ${expected}`);
  }

  const problems: string[] = [];
  const listed = new Set<string>();
  for (const [file, source] of modules) {
    const name = relative(PROJECT_ROOT, file);
    for (const statement of source.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      const list = statement.declarationList;
      const kind = list.flags & ts.NodeFlags.Const ? 'const' : list.flags & ts.NodeFlags.Let ? 'let' : 'var';
      for (const declaration of list.declarations) {
        const binding = declaration.name.getText();
        if (kind !== 'const') {
          problems.push(
            `${name}: top-level \`${kind} ${binding}\` is shared by every run of a worker thread`,
          );
        } else if (isMutableCollection(declaration.initializer)) {
          const key = `${name} ${binding}`;
          if (SHARED_ON_PURPOSE[key]) listed.add(key);
          else
            problems.push(
              `${name}: top-level collection \`${binding}\` is shared by every run of a worker thread`,
            );
        }
      }
    }
  }
  assert.deepEqual(problems, []);
  // An entry whose collection is gone is stale: the list says only what is true.
  assert.deepEqual([...listed].sort(), Object.keys(SHARED_ON_PURPOSE).sort());
});
