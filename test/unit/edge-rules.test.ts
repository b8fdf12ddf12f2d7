/** The pure rules at settle's edges: the untrusted-JSON limits, durations, Retry-After. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatDuration, parseDuration } from '../../src/domain/duration';
import { retryAfterMs } from '../../src/lib/retry-after';
import { findUnstorableJson, MAX_JSON_DEPTH, parseUntrustedJson } from '../../src/domain/untrusted-json';

/** `levels` arrays and objects inside one another, alternating, around `inner`. */
function nested(levels: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let level = 0; level < levels; level += 1) value = level % 2 ? { x: value } : [value];
  return value;
}

describe('untrusted JSON', () => {
  test(`nesting: ${MAX_JSON_DEPTH} levels pass, one more is refused at the path where it goes too deep`, () => {
    assert.equal(findUnstorableJson(nested(MAX_JSON_DEPTH)), undefined);
    const issue = findUnstorableJson({ data: nested(MAX_JSON_DEPTH) });
    assert.equal(issue?.message, `is nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
    assert.match(issue!.path, /^data(\.(0|x))+$/);
    assert.equal(issue!.path.split('.').length, MAX_JSON_DEPTH);
    // Scalars do not count as a level.
    assert.equal(findUnstorableJson(nested(MAX_JSON_DEPTH, 'deep text')), undefined);
  });

  test('a NUL or an unpaired surrogate, in a value or a key at any depth, is named by its path', () => {
    assert.deepEqual(findUnstorableJson({ data: { note: 'a\u0000b' } }), {
      path: 'data.note',
      message: 'contains a NUL character (\\u0000), which PostgreSQL cannot store',
    });
    assert.deepEqual(findUnstorableJson({ list: ['ok', 'lone \uD800 high'] }), {
      path: 'list.1',
      message: 'contains an unpaired UTF-16 surrogate, which PostgreSQL cannot store',
    });
    assert.deepEqual(findUnstorableJson({ meta: { ['k\uDC00']: 1 } }), {
      path: 'meta.k\\udc00',
      message: 'key contains an unpaired UTF-16 surrogate, which PostgreSQL cannot store',
    });
    assert.equal(findUnstorableJson('(body) \u0000')?.path, '(body)');
  });

  test('paired surrogates (an emoji), escapes and ordinary text are stored as they are', () => {
    assert.equal(
      findUnstorableJson({ note: 'paid 💶', 'clé 🔑': ['\\u0000 written out', '\t\n'] }),
      undefined,
    );
  });

  test('parseUntrustedJson: invalid JSON and refused values are issues, good JSON is the value', () => {
    assert.deepEqual(parseUntrustedJson('{"a":'), {
      ok: false,
      issue: { path: '(body)', message: 'is not valid JSON' },
    });
    assert.deepEqual(parseUntrustedJson('{"a":"\\u0000"}'), {
      ok: false,
      issue: { path: 'a', message: 'contains a NUL character (\\u0000), which PostgreSQL cannot store' },
    });
    assert.equal(parseUntrustedJson(JSON.stringify(nested(MAX_JSON_DEPTH + 1))).ok, false);
    assert.deepEqual(parseUntrustedJson('{"a":[1,{"b":null}]}'), {
      ok: true,
      value: { a: [1, { b: null }] },
    });
  });
});

describe('durations', () => {
  test('each unit parses to milliseconds; surrounding space is allowed', () => {
    assert.equal(parseDuration('45s'), 45_000);
    assert.equal(parseDuration('30m'), 1_800_000);
    assert.equal(parseDuration(' 36h '), 129_600_000);
    assert.equal(parseDuration('90d'), 7_776_000_000);
    assert.equal(parseDuration('2w'), 1_209_600_000);
    assert.equal(parseDuration('0s'), 0);
  });

  test('anything else is undefined: no unit, an unknown unit, a fraction, a sign, two units', () => {
    for (const text of ['', '90', 'd', '1y', '1.5h', '-1d', '+1d', '1h30m', '1 day', '1D']) {
      assert.equal(parseDuration(text), undefined, JSON.stringify(text));
    }
  });

  test('formatDuration writes the largest whole unit, and parses back to the same length', () => {
    assert.equal(formatDuration(7_776_000_000), '90d');
    assert.equal(formatDuration(1_209_600_000), '2w');
    assert.equal(formatDuration(129_600_000), '36h');
    assert.equal(formatDuration(90_000), '90s');
    for (const ms of [1_000, 60_000, 3_600_000, 86_400_000, 604_800_000, 5 * 60_000, 36 * 3_600_000]) {
      assert.equal(parseDuration(formatDuration(ms)), ms);
    }
  });
});

describe('Retry-After', () => {
  test('seconds and HTTP dates become the next delay; junk and the past fall back to backoff', () => {
    const now = Date.parse('2026-08-10T09:00:00Z');
    assert.equal(retryAfterMs('2', now), 2_000);
    assert.equal(retryAfterMs('Mon, 10 Aug 2026 09:00:30 GMT', now), 30_000);
    assert.equal(retryAfterMs('Mon, 10 Aug 2026 08:59:00 GMT', now), undefined);
    assert.equal(retryAfterMs('soon', now), undefined);
    assert.equal(retryAfterMs(undefined, now), undefined);
    assert.equal(retryAfterMs('999999999', now), 24 * 3_600_000);
  });
});
