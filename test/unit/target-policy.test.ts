/**
 * The reminder target guard against a table generated from the IANA IPv4 and IPv6 Special-Purpose
 * Address Registries (test/fixtures/, transcribed from IANA's CSV files): for every entry, its first,
 * middle and last addresses in every spelling a URL parser or resolver accepts. Each address's
 * expected answer comes from the most specific entry containing it; the entries the registry leaves
 * to an embedded IPv4 address (6to4, Teredo) and the NAT64 prefix are decided by that address.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import ipaddr from 'ipaddr.js';
import { createHttpClient, HttpRequestError } from '../../src/lib/http';
import { assertPublicTarget, isPublicAddress, TargetRefusedError } from '../../src/lib/target-policy';

type Row = { block: string; name: string; reachable: 'True' | 'False' | 'N/A' | '' };

function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  for (const line of text.trim().split('\n')) {
    const cells: string[] = [];
    let cell = '';
    let quoted = false;
    for (let index = 0; index < line.length; index += 1) {
      const character = line[index]!;
      if (quoted && character === '"' && line[index + 1] === '"') {
        cell += '"';
        index += 1;
      } else if (character === '"') {
        quoted = !quoted;
      } else if (character === ',' && !quoted) {
        cells.push(cell);
        cell = '';
      } else {
        cell += character;
      }
    }
    cells.push(cell);
    rows.push(cells);
  }
  return rows;
}

/** One row per address block (a cell may list two), footnote marks such as ` [2]` removed. */
function readRegistry(file: string): Row[] {
  const [header, ...rows] = parseCsv(readFileSync(join(__dirname, '..', 'fixtures', file), 'utf8'));
  const column = (name: string) => header!.indexOf(name);
  return rows.flatMap((cells) =>
    cells[column('Address Block')]!.split(',').map((block) => ({
      block: block.replace(/\[\d+\]/, '').trim(),
      name: cells[column('Name')]!,
      reachable: cells[column('Globally Reachable')]!.replace(/\[\d+\]/, '').trim() as Row['reachable'],
    })),
  );
}

const IPV4 = readRegistry('iana-ipv4-special-registry.csv');
const IPV6 = readRegistry('iana-ipv6-special-registry.csv');
/** The prefixes whose addresses lead to an IPv4 address inside them. */
const EMBEDDING = ['2002::/16', '2001::/32', '64:ff9b::/96'];

const toBig = (bytes: number[]) => bytes.reduce((value, byte) => (value << 8n) | BigInt(byte), 0n);
function fromBig(value: bigint, bytes: number): number[] {
  return Array.from({ length: bytes }, (_, index) =>
    Number((value >> BigInt(8 * (bytes - 1 - index))) & 0xffn),
  );
}

/** First, middle and last address of a block. */
function samples(block: string): ipaddr.IPv4[] | ipaddr.IPv6[] {
  const [network, prefix] = ipaddr.parseCIDR(block);
  const bytes = network.kind() === 'ipv4' ? 4 : 16;
  const hostBits = BigInt(bytes * 8 - prefix);
  const first = toBig(network.toByteArray()) & ~((1n << hostBits) - 1n);
  const last = first | ((1n << hostBits) - 1n);
  const middle = first + ((last - first) >> 1n) + (hostBits > 2n ? 1n : 0n);
  return [first, middle, last].map((value) => ipaddr.fromByteArray(fromBig(value, bytes))) as
    ipaddr.IPv4[] | ipaddr.IPv6[];
}

function mostSpecific(address: ipaddr.IPv4 | ipaddr.IPv6, rows: Row[]): Row | undefined {
  return rows
    .filter((row) => address.match(ipaddr.parseCIDR(row.block)))
    .sort((a, b) => ipaddr.parseCIDR(b.block)[1] - ipaddr.parseCIDR(a.block)[1])[0];
}

const MULTICAST_V4 = ipaddr.parseCIDR('224.0.0.0/4');
function expectedIPv4(address: ipaddr.IPv4): boolean {
  if (address.match(MULTICAST_V4)) return false;
  const row = mostSpecific(address, IPV4);
  return row ? row.reachable === 'True' : true;
}

const v4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 255, low >> 8, low & 255]);
function embedded(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = address.parts;
  if (address.match(ipaddr.parseCIDR('2002::/16'))) return [v4(p[1]!, p[2]!)];
  if (address.match(ipaddr.parseCIDR('2001::/32')))
    return [v4(p[2]!, p[3]!), v4(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
  return [v4(p[6]!, p[7]!)];
}

function expectedIPv6(address: ipaddr.IPv6): boolean {
  const row = mostSpecific(address, IPV6);
  if (row && EMBEDDING.includes(row.block)) return embedded(address).every(expectedIPv4);
  if (row) return row.reachable === 'True';
  return address.match(ipaddr.parseCIDR('2000::/3'));
}

/** Every way a URL or a resolver may spell an IPv4 address, and the IPv6 forms that embed it. */
function ipv4Spellings(address: ipaddr.IPv4): { text: string; expected: boolean }[] {
  const [a, b, c, d] = address.octets as [number, number, number, number];
  const value = (((a << 24) >>> 0) + (b << 16) + (c << 8) + d) >>> 0;
  const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
  const reachable = expectedIPv4(address);
  const high = (a << 8) | b;
  const low = (c << 8) | d;
  return [
    { text: `${a}.${b}.${c}.${d}`, expected: reachable },
    { text: String(value), expected: reachable },
    { text: `0x${hex(value, 8)}`, expected: reachable },
    { text: [a, b, c, d].map((octet) => `0${octet.toString(8)}`).join('.'), expected: reachable },
    { text: [a, b, c, d].map((octet) => `0x${hex(octet, 2)}`).join('.'), expected: reachable },
    { text: `${a}.${b}.${(c << 8) + d}`, expected: reachable },
    { text: `${a}.${(b << 16) + (c << 8) + d}`, expected: reachable },
    // IPv4-mapped: the registry marks ::ffff:0:0/96 not reachable, whatever it maps to.
    { text: `::ffff:${a}.${b}.${c}.${d}`, expected: false },
    { text: `::ffff:${hex(high, 1)}:${hex(low, 1)}`, expected: false },
    // IPv4-compatible (deprecated, outside 2000::/3).
    { text: `::${a}.${b}.${c}.${d}`, expected: false },
    // 6to4, NAT64 (well-known and local-use) and Teredo (client address inverted, public server).
    { text: `2002:${hex(high, 1)}:${hex(low, 1)}::1`, expected: reachable },
    { text: `64:ff9b::${a}.${b}.${c}.${d}`, expected: reachable },
    { text: `64:ff9b:1::${a}.${b}.${c}.${d}`, expected: false },
    {
      text: `2001:0:4136:e378:8000:63bf:${hex(high ^ 0xffff, 1)}:${hex(low ^ 0xffff, 1)}`,
      expected: reachable,
    },
  ];
}

type Case = { entry: string; text: string; expected: boolean };

function table(): Case[] {
  const cases: Case[] = [];
  for (const row of IPV4) {
    for (const address of samples(row.block) as ipaddr.IPv4[]) {
      for (const spelling of ipv4Spellings(address)) {
        cases.push({ entry: `${row.block} ${row.name}`, ...spelling });
      }
    }
  }
  const publicIPv4 = ['8.8.8.8', '1.1.1.1', '93.184.216.34'].map((text) => ipaddr.IPv4.parse(text));
  for (const row of IPV6) {
    for (const address of samples(row.block) as ipaddr.IPv6[]) {
      const text = address.toString();
      cases.push({ entry: `${row.block} ${row.name}`, text, expected: expectedIPv6(address) });
      cases.push({
        entry: `${row.block} ${row.name}`,
        text: address.toNormalizedString(),
        expected: expectedIPv6(address),
      });
    }
  }
  for (const address of publicIPv4) {
    for (const spelling of ipv4Spellings(address)) cases.push({ entry: 'public IPv4', ...spelling });
  }
  for (const text of ['2606:4700:4700::1111', '2a00:1450:4001:80e::200e', '2001:4:112::1', '192.0.0.9']) {
    cases.push({ entry: 'globally reachable', text, expected: true });
  }
  return cases;
}

const CASES = table();

describe('the target guard follows the IANA special-purpose registries', () => {
  test('the fixtures hold both registries, with their reachability column', () => {
    assert.ok(IPV4.length >= 25 && IPV6.length >= 24, `${IPV4.length} IPv4, ${IPV6.length} IPv6 rows`);
    assert.ok(
      IPV4.every((row) => ipaddr.isValidCIDR(row.block)) &&
        IPV6.every((row) => ipaddr.isValidCIDR(row.block)),
    );
    assert.ok(CASES.filter((c) => !c.expected).length > 500 && CASES.filter((c) => c.expected).length > 30);
  });

  test(`isPublicAddress answers every one of the ${CASES.length} generated addresses as the registries say`, () => {
    const wrong = CASES.filter((c) => isPublicAddress(c.text) !== c.expected);
    assert.deepEqual(
      wrong.slice(0, 20).map((c) => `${c.text} (${c.entry}) expected ${c.expected ? 'accepted' : 'refused'}`),
      [],
    );
  });

  test('scheduling refuses every non-reachable address written as a URL host', async () => {
    const refused = CASES.filter((c) => !c.expected);
    const accepted: string[] = [];
    for (const c of refused) {
      const host = c.text.includes(':') ? `[${c.text}]` : c.text;
      let url: URL;
      try {
        url = new URL(`http://${host}/hook`);
      } catch {
        continue; // A spelling the URL parser itself refuses never reaches the guard.
      }
      const outcome = await assertPublicTarget(url).then(
        () => 'accepted',
        (error: unknown) => (error instanceof TargetRefusedError ? 'refused' : String(error)),
      );
      if (outcome !== 'refused') accepted.push(`${c.text} → ${url.hostname}: ${outcome}`);
    }
    assert.deepEqual(accepted.slice(0, 20), []);
  });

  test('delivery refuses them again, before connecting', async () => {
    const http = createHttpClient();
    const reached: string[] = [];
    for (const c of CASES.filter((x) => !x.expected).filter((_, index) => index % 7 === 0)) {
      const host = c.text.includes(':') ? `[${c.text}]` : c.text;
      try {
        new URL(`http://${host}/`);
      } catch {
        continue;
      }
      const error = await http
        .post(`http://${host}/hook`, {
          headers: {},
          body: '{}',
          timeoutMs: 5_000,
          allowPrivateTargets: false,
        })
        .then(
          () => undefined,
          (failure: unknown) => failure,
        );
      if (!(error instanceof HttpRequestError && error.kind === 'target_refused')) reached.push(c.text);
    }
    assert.deepEqual(reached, []);
  });

  test('a name that resolves to a loopback address is refused at scheduling and at delivery', async () => {
    await assert.rejects(assertPublicTarget(new URL('http://localhost:9/hook')), TargetRefusedError);
    const error = await createHttpClient()
      .post('http://localhost:9/hook', {
        headers: {},
        body: '{}',
        timeoutMs: 5_000,
        allowPrivateTargets: false,
      })
      .then(
        () => undefined,
        (failure: unknown) => failure,
      );
    assert.ok(error instanceof HttpRequestError && error.kind === 'target_refused', String(error));
  });
});
