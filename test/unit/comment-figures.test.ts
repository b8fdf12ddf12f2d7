import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import { Linter, type ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

/** The repository's own ESLint config, where settle's comment rule is declared. */
const CONFIG = pathToFileURL(join(__dirname, '..', '..', 'eslint.config.mjs')).href;

async function flagged(source: string): Promise<string[]> {
  const { settlePlugin } = (await import(CONFIG)) as { settlePlugin: ESLint.Plugin };
  const linter = new Linter({ configType: 'flat' });
  const messages = linter.verify(
    source,
    [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser },
        plugins: { settle: settlePlugin },
        rules: { 'settle/no-figures-in-comments': 'error' },
      },
    ],
    'src/example.ts',
  );
  return messages
    .sort((a, b) => a.line - b.line || a.column - b.column)
    .map((message) => `${message.line}:${message.column} ${message.message.split(' in a comment')[0]}`);
}

describe('settle/no-figures-in-comments', () => {
  test('refuses a figure in ms, a percentage and an issue number, where each stands', async () => {
    const source = [
      '/**',
      ' * Costs 0.4–0.8 ms of CPU per event, a tenth (10 %) of the total.',
      ' */',
      'const a = 1; // see issue 41',
      '// fixed in #41; 250ms at p99; 3 milliseconds; 12 µs; 5 percent',
      'export { a };',
    ].join('\n');
    // Line:column of each figure, so the editor points at it.
    assert.deepEqual(await flagged(source), [
      '2:14 a figure in ms ("0.8 ms")',
      '2:48 a percentage ("10 %")',
      '4:21 an issue number ("issue 41")',
      '5:13 an issue number ("#41")',
      '5:18 a figure in ms ("250ms")',
      '5:32 a figure in ms ("3 milliseconds")',
      '5:48 a figure in ms ("12 µs")',
      '5:55 a percentage ("5 percent")',
    ]);
  });

  test('leaves code, strings and comments that only explain alone', async () => {
    const source = [
      "const retry = { initialInterval: '500 milliseconds' }; // doubling, up to the maximum interval",
      "const label = 'issue 41 at 25 %';",
      '/** `retryAfterMs` is the downstream Retry-After; the colour is #fff; item 2 of the list. */',
      'export { retry, label };',
    ].join('\n');
    assert.deepEqual(await flagged(source), []);
  });
});
