/**
 * docs/ is reference: what is true today, short enough to read in one sitting. Each page is at most
 * 25 KB and all of them together at most 200 KB (bytes, as `wc -c` counts them); no page carries a
 * date, a word that places it in a working session, or an issue number. Dated runs belong in the
 * journal (journal/, beside docs/), which the pages link to.
 *
 * What is read is the page's prose: fenced code blocks, code spans and link targets are left out. Code
 * names identifiers and examples (Stripe's API version `2022-11-15`, a report file
 * `/reports/2026-08-10.jsonl`), and a link target names a journal file or heading, which may carry its
 * date; the words a reader sees may not.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { PROJECT_ROOT } from '../../src/lib/paths';

const DOCS = 'docs';
const PAGE_LIMIT = 25_000;
const TOTAL_LIMIT = 200_000;

const MONTH =
  '(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)';

/** What a reference page may not say, each with the reason a failure names. */
const REFUSED: { what: string; pattern: RegExp }[] = [
  { what: 'a date', pattern: /\b\d{4}-\d{2}-\d{2}\b/ },
  { what: 'a date', pattern: new RegExp(`\\b${MONTH}\\.?,?\\s+\\d{4}\\b`) },
  { what: 'a date', pattern: new RegExp(`\\b\\d{1,2}(?:[–-]\\d{1,2})?\\s+${MONTH}\\b`) },
  { what: 'a session word', pattern: /\bsessions?\b/i },
  { what: 'a session word', pattern: /\b(?:this|last|next|previous) turn\b/i },
  { what: 'an issue number', pattern: /\b(?:issues?|pull requests?)\s+#?\d+/i },
  { what: 'an issue number', pattern: /(?<![\w&/#])#\d+\b/ },
];

/** `markdown` with code blocks, code spans and link targets blanked out, lines kept where they were. */
function prose(markdown: string): string {
  const blank = (text: string) => text.replace(/[^\n]/g, ' ');
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, blank)
    .replace(/(`+)[^`\n][\s\S]*?\1/g, blank)
    .replace(/\]\([^)\s]*\)/g, (link) => `]${blank(link.slice(1))}`)
    .replace(/^(\s*\[[^\]]+\]:)\s+\S+.*$/gm, (_line, label: string) => label);
}

/** Each refused phrase of `markdown` as `page:line: what: "text"`. */
function refusals(page: string, markdown: string): string[] {
  const found: string[] = [];
  prose(markdown)
    .split('\n')
    .forEach((line, index) => {
      for (const { what, pattern } of REFUSED) {
        const match = pattern.exec(line);
        if (match) found.push(`${page}:${index + 1}: ${what}: "${match[0]}"`);
      }
    });
  return found;
}

function pages(): string[] {
  return readdirSync(join(PROJECT_ROOT, DOCS))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join(DOCS, name));
}

describe('docs/ is reference', () => {
  const all = pages();
  const bytes = (page: string) => readFileSync(join(PROJECT_ROOT, page)).length;

  test('the pages are found', () => {
    for (const page of ['docs/architecture.md', 'docs/configuration.md', 'docs/performance.md']) {
      assert.ok(all.includes(page), `${page} is read`);
    }
  });

  test(`all pages together are at most ${TOTAL_LIMIT} bytes`, () => {
    const sizes = all.map((page) => `${page} ${bytes(page)}`).join(', ');
    const total = all.reduce((sum, page) => sum + bytes(page), 0);
    assert.ok(total <= TOTAL_LIMIT, `docs/*.md is ${total} bytes, over ${TOTAL_LIMIT}: ${sizes}`);
  });

  for (const page of all) {
    test(`${page}: at most ${PAGE_LIMIT} bytes, no dates, session words or issue numbers`, () => {
      const size = bytes(page);
      const problems = [
        ...(size > PAGE_LIMIT ? [`${page}: ${size} bytes, over ${PAGE_LIMIT}`] : []),
        ...refusals(page, readFileSync(join(PROJECT_ROOT, page), 'utf8')),
      ];
      assert.deepEqual(problems, [], `${page} is too long or says what belongs in the journal`);
    });
  }

  test('each kind of journal phrase is refused in prose, and code and link targets are not read', () => {
    const refused = [
      'Measured on 2026-12-05.',
      'The run of Dec 2026.',
      'In December, 2026 it held.',
      'The full rows of 4 Dec.',
      'On 1–2 Dec the bench ran.',
      'This session moved it.',
      'The fourth Session again.',
      'Left for this turn.',
      'Built in the last turn.',
      'Done in issue 41.',
      "Issue 12's goals.",
      'See #41 for why.',
      'Merged in pull request 7.',
    ];
    for (const line of refused) {
      assert.equal(refusals('p.md', line).length, 1, `refused: ${line}`);
    }
    const kept = [
      'Stripe API version `2022-11-15` and `settle import /reports/2026-08-10.jsonl`.',
      '```\nsettle recover --since 2026-12-01\n```',
      'The [runs](../journal/performance-2026-12.md#fewer-round-trips-issue-41-4-dec-2026) behind it.',
      '[d4]: ../journal/performance-2026-12.md#the-first-pass-issue-41-4-dec-2026-short-rows',
      'The rows run in turn; 50 in flight; 25 % of the rate; upstream nodejs/node#47739.',
      'A `## heading` and &#39; and 2026 alone and p99 at 10 ms.',
    ];
    for (const text of kept) {
      assert.deepEqual(refusals('p.md', text), [], `kept: ${text}`);
    }
    assert.deepEqual(refusals('docs/x.md', 'one\n\ntwo: measured 3 Dec 2026'), [
      'docs/x.md:3: a date: "Dec 2026"',
      'docs/x.md:3: a date: "3 Dec"',
    ]);
  });
});
