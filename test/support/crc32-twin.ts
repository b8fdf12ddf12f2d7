import { crc32 } from 'node:zlib';

/** The pad's alphabet: `@` to `O`, sixteen printable characters that differ in their low four bits only. */
const PAD_BASE = 0x40;
export const PAD_LENGTH = 12;
/** The pad as it is first written into a body, before its bits are chosen. */
export const PAD_PLACEHOLDER = String.fromCharCode(PAD_BASE).repeat(PAD_LENGTH);

/**
 * Chooses the pad in `body` (its one occurrence of PAD_PLACEHOLDER) so that the body's CRC32 is
 * `target`: the standard forcing of a linear checksum. For two bodies of the same length,
 * crc(a ⊕ b ⊕ c) = crc(a) ⊕ crc(b) ⊕ crc(c), so flipping pad bit j changes the CRC by a fixed
 * 32-bit vector; the 48 pad bits (12 characters × 4) give 48 such vectors, and a subset XORing to
 * crc(body) ⊕ target is found by Gaussian elimination over GF(2).
 */
export function forceCrc32(body: string, target: number): string {
  const start = body.indexOf(PAD_PLACEHOLDER);
  if (start < 0 || body.indexOf(PAD_PLACEHOLDER, start + 1) >= 0)
    throw new Error('one pad placeholder expected');
  const bytes = Buffer.from(body, 'utf8');
  const offset = Buffer.byteLength(body.slice(0, start), 'utf8');
  const base = crc32(bytes) >>> 0;
  const columns: { delta: number; flips: bigint }[] = [];
  for (let char = 0; char < PAD_LENGTH; char += 1) {
    for (let bit = 0; bit < 4; bit += 1) {
      const flipped = Buffer.from(bytes);
      flipped[offset + char]! ^= 1 << bit;
      columns.push({ delta: (crc32(flipped) >>> 0) ^ base, flips: 1n << BigInt(char * 4 + bit) });
    }
  }
  // Row-reduce: one pivot column per CRC bit, each combination remembering which pad bits it flips.
  const pivots: ({ delta: number; flips: bigint } | undefined)[] = new Array(32);
  for (const column of columns) {
    let { delta, flips } = column;
    for (let bit = 31; bit >= 0 && delta !== 0; bit -= 1) {
      if (((delta >>> bit) & 1) === 0) continue;
      const pivot = pivots[bit];
      if (!pivot) {
        pivots[bit] = { delta, flips };
        break;
      }
      delta = (delta ^ pivot.delta) >>> 0;
      flips ^= pivot.flips;
    }
  }
  let wanted = (base ^ target) >>> 0;
  let flips = 0n;
  for (let bit = 31; bit >= 0 && wanted !== 0; bit -= 1) {
    if (((wanted >>> bit) & 1) === 0) continue;
    const pivot = pivots[bit];
    if (!pivot) throw new Error('the pad bits do not span the CRC32 (try another pad position)');
    wanted = (wanted ^ pivot.delta) >>> 0;
    flips ^= pivot.flips;
  }
  const forged = Buffer.from(bytes);
  for (let j = 0; j < PAD_LENGTH * 4; j += 1) {
    if ((flips >> BigInt(j)) & 1n) forged[offset + Math.floor(j / 4)]! ^= 1 << (j % 4);
  }
  return forged.toString('utf8');
}
