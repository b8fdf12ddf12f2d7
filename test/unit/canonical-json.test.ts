import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { canonicalJson } from '../../src/lib/canonical-json';
import { payloadSha256 } from '../../src/lib/hash';

/** The same value with every object's keys in another order (arrays keep theirs: order matters there). */
function reorderKeys(value: unknown, order: (keys: string[]) => string[]): unknown {
  if (Array.isArray(value)) return value.map((element) => reorderKeys(element, order));
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  return Object.fromEntries(order(Object.keys(record)).map((key) => [key, reorderKeys(record[key], order)]));
}

/** `printf '%s' '<the canonical text below>' | sha256sum`, computed outside settle. */
const GOLDEN_SHA256 = 'f378652e4600d16509c4d1b438df7929597207afedb1685e582172b35b871214';

const reversed = (keys: string[]) => [...keys].reverse();
/** A key order drawn by fast-check, the same at every depth. */
const shuffledBy = (seed: number) => (keys: string[]) =>
  keys
    .map((key, index) => ({ key, rank: (index * 2654435761 + seed) % 4294967296 }))
    .sort((a, b) => a.rank - b.rank)
    .map(({ key }) => key);

describe('canonicalJson', () => {
  test('golden bytes: keys sorted by UTF-16 code unit at every depth, no white space, undefined left out', () => {
    assert.equal(
      canonicalJson({ b: 1, a: [true, null, 'x'], c: { z: 'é', y: -1.5 } }),
      '{"a":[true,null,"x"],"b":1,"c":{"y":-1.5,"z":"é"}}',
    );
    assert.equal(canonicalJson({ é: 1, z: 2, A: 3, a: 4, '': 5 }), '{"":5,"A":3,"a":4,"z":2,"é":1}');
    assert.equal(canonicalJson({ kept: 0, dropped: undefined }), '{"kept":0}');
    assert.equal(canonicalJson([]), '[]');
    assert.equal(canonicalJson({}), '{}');
    assert.equal(canonicalJson('line\nbreak "quoted"'), '"line\\nbreak \\"quoted\\""');
    assert.equal(canonicalJson([1e21, 0.1, -0]), '[1e+21,0.1,0]');
  });

  test('golden hash: a payment event spaced and ordered two ways has one payload fingerprint', () => {
    const compact =
      '{"id":"evt_1","type":"payment.settled","created_at":"2026-08-10T02:14:00Z","data":{"shipment_id":"SHP-4821","payment_id":"pi_1","amount":12500,"currency":"EUR"}}';
    const spaced = `{
      "data": { "currency": "EUR", "amount": 12500, "payment_id": "pi_1", "shipment_id": "SHP-4821" },
      "created_at": "2026-08-10T02:14:00Z", "type": "payment.settled", "id": "evt_1"
    }`;
    const canonical =
      '{"created_at":"2026-08-10T02:14:00Z","data":{"amount":12500,"currency":"EUR","payment_id":"pi_1","shipment_id":"SHP-4821"},"id":"evt_1","type":"payment.settled"}';
    assert.equal(canonicalJson(JSON.parse(compact)), canonical);
    assert.equal(canonicalJson(JSON.parse(spaced)), canonical);
    assert.equal(payloadSha256(JSON.parse(spaced)), GOLDEN_SHA256);
    // One changed value is another fingerprint.
    assert.notEqual(payloadSha256({ ...JSON.parse(compact), id: 'evt_2' }), GOLDEN_SHA256);
  });

  test('property: the key order of the input never changes the output', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (value, seed) => {
        const expected = canonicalJson(value);
        assert.equal(canonicalJson(reorderKeys(value, reversed)), expected);
        assert.equal(canonicalJson(reorderKeys(value, shuffledBy(seed))), expected);
      }),
    );
  });

  test('property: stable and round-trips: parsing the output gives the value back, and writing it again the same bytes', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(value)));
        assert.equal(canonicalJson(JSON.parse(text)), text);
        assert.doesNotMatch(text.replace(/"(?:[^"\\]|\\.)*"/g, '""'), /\s/);
      }),
    );
  });

  test('nesting far past any call stack is written without overflowing', () => {
    let deep: unknown = 'core';
    for (let depth = 0; depth < 30_000; depth += 1) deep = depth % 2 ? [deep] : { k: deep };
    const text = canonicalJson(deep);
    assert.ok(text.startsWith('[{"k":[{"k":'));
    assert.ok(text.includes('"core"'));
  });
});
