/**
 * Hostile and careless input, by class: text PostgreSQL cannot store, pathological nesting, IDs at
 * their maximum length, a known ID with another type, and the framework's own error statuses. Each
 * refusal must be a documented 4xx that names the field, writes nothing and never echoes an ID.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import type { AddressInfo } from 'node:net';
import { buildGateway } from '../src/gateway/server';
import { MAX_JSON_DEPTH } from '../src/domain/untrusted-json';
import { classifyDatabaseFailure, codeForSqlState, ErrorCode } from '../src/domain/errors';
import { paymentWorkflowId } from '../src/domain/ids';
import { logger } from '../src/lib/logger';
import {
  countRows,
  createTestDatabase,
  paymentEvent,
  postWebhook,
  uniqueId,
  waitFor,
  type PostResult,
} from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';
import { remindersApi } from './support/reminders';

const stack = useTestStack();

const NUL = '\u0000';
const LONE_HIGH = '\uD800';
const LONE_LOW = '\uDC00';

/** An ID of exactly `length` characters of the accepted alphabet, unique per call. */
function idOfLength(length: number, prefix = 'max'): string {
  return uniqueId(prefix).padEnd(length, 'x.:-_');
}

function nested(depth: number, leaf: unknown = 1): unknown {
  let value: unknown = leaf;
  for (let level = 0; level < depth; level += 1) value = [value];
  return value;
}

/** The documented error body: status, stable code, message; never the ID that was sent. */
function assertErrorShape(
  response: { status: number; body: Record<string, unknown> },
  status: number,
  error: string,
  mustNotEcho?: string,
) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.status, 'rejected');
  assert.equal(response.body.error, error);
  assert.equal(typeof response.body.message, 'string');
  if (mustNotEcho) assert.ok(!JSON.stringify(response.body).includes(mustNotEcho), 'the body echoes the ID');
}

function assertIssueAt(response: PostResult | { body: Record<string, unknown> }, path: string) {
  const issues = response.body.issues as { path: string }[];
  assert.ok(
    issues?.some((issue) => issue.path === path),
    `expected an issue at ${path}: ${JSON.stringify(response.body)}`,
  );
}

async function get(path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${stack.gatewayUrl}${path}`, {
    headers: { authorization: `Bearer ${stack.apiToken}`, ...headers },
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

/** Sends raw bytes, for what fetch refuses to send (a NUL in a header, a broken request line). */
function rawRequest(bytes: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const { port } = new URL(stack.gatewayUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, body] = received.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1]);
      try {
        resolve({ status, body: JSON.parse(body ?? '') });
      } catch {
        reject(new Error(`not a JSON body: ${JSON.stringify(received)}`));
      }
    });
    socket.end(Buffer.from(bytes, 'latin1'));
  });
}

/**
 * Sends the request line, headers and the whole body before reading a byte of the answer (the socket
 * stays paused until the last byte is accepted), then reads the answer to the end: what a client
 * that answers nothing early sees. A server that closes with body bytes unread resets the
 * connection, and the paused answer is lost with it.
 */
function sendWholeBodyThenRead(
  method: string,
  path: string,
  contentType: string | undefined,
  size: number,
  framing: 'content-length' | 'chunked',
): Promise<{ status: number; body: Record<string, unknown> }> {
  const { port } = new URL(stack.gatewayUrl);
  const chunk = Buffer.alloc(64 * 1024, 'x');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    socket.pause();
    const received: Buffer[] = [];
    socket.on('error', reject);
    const head = [
      `${method} ${path} HTTP/1.1`,
      'host: settle.test',
      `authorization: Bearer ${stack.apiToken}`,
      'idempotency-key: k-big',
      ...(contentType ? [`content-type: ${contentType}`] : []),
      framing === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${size}`,
    ].join('\r\n');
    socket.write(`${head}\r\n\r\n`);
    for (let sent = 0; sent < size; sent += chunk.length) {
      const piece = chunk.subarray(0, Math.min(chunk.length, size - sent));
      socket.write(
        framing === 'chunked'
          ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
          : piece,
      );
    }
    socket.write(framing === 'chunked' ? '0\r\n\r\n' : '', () => {
      socket.on('data', (data: Buffer) => {
        received.push(data);
        const text = Buffer.concat(received).toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? NaN);
        if (end < 0 || text.length < end + 4 + length) return;
        socket.destroy();
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
        try {
          resolve({ status, body: JSON.parse(text.slice(end + 4, end + 4 + length)) });
        } catch {
          reject(new Error(`not a JSON body: ${JSON.stringify(text.slice(0, 400))}`));
        }
      });
      socket.on('end', () =>
        reject(
          new Error(
            `the answer ended early: ${JSON.stringify(Buffer.concat(received).toString('latin1').slice(0, 400))}`,
          ),
        ),
      );
      socket.resume();
    });
  });
}

const reminderBody = (extra: Record<string, unknown> = {}) => ({
  contract_id: 'CT-88',
  due_at: '2099-08-10T09:00:00Z',
  webhook_url: 'http://127.0.0.1:9/renewal',
  ...extra,
});

describe('text PostgreSQL cannot store is a 400 naming the field, never a 503', () => {
  const unstorable = { NUL, 'a lone high surrogate': LONE_HIGH, 'a lone low surrogate': LONE_LOW };
  for (const [name, character] of Object.entries(unstorable)) {
    test(`${name} in a value, a key and a nested key of a webhook`, async () => {
      const placements: [string, (id: string) => unknown][] = [
        [
          'data.shipment_id',
          (id) => ({
            ...paymentEvent({ id }),
            data: { ...paymentEvent().data, shipment_id: `S${character}` },
          }),
        ],
        ['note', (id) => ({ ...paymentEvent({ id }), note: `before${character}after` })],
        ['extra.1.deep', (id) => ({ ...paymentEvent({ id }), extra: [0, { deep: character }] })],
        [
          `k\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
          (id) => ({ ...paymentEvent({ id }), [`k${character}`]: 1 }),
        ],
        [
          'data.x\\u' + character.charCodeAt(0).toString(16).padStart(4, '0'),
          (id) => {
            const event = paymentEvent({ id });
            return { ...event, data: { ...event.data, [`x${character}`]: true } };
          },
        ],
        // An ignored type is read by the same rule.
        ['note', (id) => ({ ...paymentEvent({ id, type: 'payment.disputed' }), note: character })],
      ];
      for (const [path, build] of placements) {
        const id = uniqueId('poison');
        const response = await postWebhook(stack, build(id));
        assertErrorShape(response, 400, 'invalid_event');
        assertIssueAt(response, path);
        assert.equal(await countRows(stack.pool, 'events', id), 0);
      }
    });

    test(`${name} in a reminder body, the Idempotency-Key header and path parameters`, async () => {
      const key = uniqueId('rem');
      const inPayload = await remindersApi(stack.gatewayUrl, stack.apiToken, 'POST', '/reminders', {
        key,
        body: reminderBody({ payload: { list: ['ok', `x${character}`] } }),
      });
      assertErrorShape(inPayload, 400, 'invalid_reminder');
      assertIssueAt(inPayload, 'payload.list.1');
      const inKey = await remindersApi(stack.gatewayUrl, stack.apiToken, 'POST', '/reminders', {
        key,
        body: reminderBody({ payload: { [`k${character}`]: 1 } }),
      });
      assertErrorShape(inKey, 400, 'invalid_reminder');
      const { rows } = await stack.pool.query('SELECT 1 FROM reminders WHERE delivery_id = $1', [key]);
      assert.equal(rows.length, 0);
    });
  }

  test('a NUL in a path parameter is a 400 naming the parameter', async () => {
    const event = await get('/events/pay%00x');
    assertErrorShape(event, 400, 'invalid_event');
    assertIssueAt(event, 'params.eventId');
    for (const method of ['GET', 'DELETE'] as const) {
      const reminder = await remindersApi(stack.gatewayUrl, stack.apiToken, method, '/reminders/rem%00x');
      assertErrorShape(reminder, 400, 'invalid_reminder');
      assertIssueAt(reminder, 'params.deliveryId');
    }
  });

  test('invalid UTF-8 in a path (a surrogate encoded as bytes) is a 400 in the documented shape', async () => {
    const event = await get('/events/pay%ED%A0%80x');
    assertErrorShape(event, 400, 'bad_request');
  });

  test('a NUL byte or a control character in a header is a 400 in the documented shape', async () => {
    for (const value of ['key\u0000x', 'key\u0001x']) {
      const response = await rawRequest(
        `POST /reminders HTTP/1.1\r\nhost: x\r\nidempotency-key: ${value}\r\ncontent-length: 0\r\n\r\n`,
      );
      assertErrorShape(response, 400, 'bad_request');
    }
  });

  test("PostgreSQL's data errors are classified as the value's fault, its connection errors as unavailable", async () => {
    for (const sqlState of ['22P05', '22021', '22P02', '54001']) {
      assert.equal(codeForSqlState(sqlState), ErrorCode.InvalidData, sqlState);
    }
    for (const sqlState of ['08006', '57P01', '57P03', '53300']) {
      assert.equal(codeForSqlState(sqlState), ErrorCode.DatabaseUnavailable, sqlState);
    }
    // A real refusal by the real server: a NUL in a text parameter (22021).
    const error = await stack.pool.query('SELECT $1::text', [`a${NUL}b`]).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    assert.ok(error, 'PostgreSQL accepted a NUL');
    assert.equal(classifyDatabaseFailure(error), 'invalid_data');
    assert.equal(
      classifyDatabaseFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
      'unavailable',
    );
    // A statement its timeout cancelled: PostgreSQL too busy, not the request's fault nor settle's.
    assert.equal(codeForSqlState('57014'), ErrorCode.DatabaseUnavailable);
  });
});

describe('a race the door loses to another transaction is run again, then a 503, never a 500', () => {
  let racesInstalled: Promise<unknown> | undefined;
  /**
   * Makes the admission's insert of `eventId` fail `failures` times with `sqlState`, as PostgreSQL
   * fails a transaction that lost a deadlock, a serialization race or a lock timeout to another. The
   * count of inserts tried is a sequence's, which a rolled-back transaction does not undo. The trigger
   * is created once and stays with the test's database (dropping it would lock `events` under a
   * running worker).
   */
  async function loseRaces(
    eventId: string,
    sqlState: string,
    failures: number,
  ): Promise<() => Promise<number>> {
    racesInstalled ??= stack.pool.query(`
      CREATE TABLE test_door_races (event_id text PRIMARY KEY, sql_state text, failures int, tries text);
      CREATE FUNCTION test_door_race() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE race test_door_races;
      BEGIN
        SELECT * INTO race FROM test_door_races WHERE event_id = NEW.event_id;
        IF FOUND AND nextval(race.tries::regclass) <= race.failures THEN
          RAISE EXCEPTION 'the test lost this race' USING ERRCODE = race.sql_state;
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_door_race BEFORE INSERT ON events
        FOR EACH ROW EXECUTE FUNCTION test_door_race();`);
    await racesInstalled;
    const tries = `test_door_race_${sqlState.toLowerCase()}_${failures}_${Math.random().toString(36).slice(2, 8)}`;
    await stack.pool.query(`CREATE SEQUENCE ${tries}`);
    await stack.pool.query('INSERT INTO test_door_races VALUES ($1, $2, $3, $4)', [
      eventId,
      sqlState,
      failures,
      tries,
    ]);
    return async () => {
      const { rows } = await stack.pool.query<{ n: string; called: boolean }>(
        `SELECT last_value AS n, is_called AS called FROM ${tries}`,
      );
      return rows[0]!.called ? Number(rows[0]!.n) : 0;
    };
  }

  test('lost twice, the admission is made on the third try and applied once', async () => {
    for (const sqlState of ['40P01', '40001', '55P03']) {
      const event = paymentEvent({ id: uniqueId('race') });
      const tries = await loseRaces(event.id, sqlState, 2);
      const response = await postWebhook(stack, event);
      assert.equal(response.status, 202, `${sqlState}: ${JSON.stringify(response.body)}`);
      assert.equal(await tries(), 3, sqlState);
      await waitFor(`the claim of the event whose admission lost ${sqlState} twice`, () =>
        countRows(stack.pool, 'claims', event.id),
      );
      assert.equal(await countRows(stack.pool, 'events', event.id), 1);
      assert.equal(await countRows(stack.pool, 'claims', event.id), 1);
    }
  });

  test('lost every time, the answer is a 503 with Retry-After and nothing is written or started', async () => {
    for (const sqlState of ['40P01', '40001', '55P03']) {
      const event = paymentEvent({ id: uniqueId('race') });
      const tries = await loseRaces(event.id, sqlState, 1_000);
      const response = await postWebhook(stack, event);
      assertErrorShape(response, 503, 'database_unavailable', event.id);
      assert.ok(Number(response.headers.get('retry-after')) > 0, sqlState);
      assert.ok((await tries()) > 1, `${sqlState}: the admission was not run again`);
      assert.equal(await countRows(stack.pool, 'events', event.id), 0);
      await assert.rejects(
        stack.client.workflow.getHandle(paymentWorkflowId(event.id)).describe(),
        (error) => {
          assert.equal((error as Error).name, 'WorkflowNotFoundError', sqlState);
          return true;
        },
      );
    }
  });
});

describe(`JSON nested deeper than ${MAX_JSON_DEPTH} levels is a 400 naming the limit`, () => {
  test('a webhook at the limit is accepted; one level deeper, or thousands, is refused', async () => {
    // The event object itself is level 1, so the unknown field holds MAX_JSON_DEPTH - 1 levels.
    const atLimit = uniqueId('deep');
    const accepted = await postWebhook(stack, {
      ...paymentEvent({ id: atLimit }),
      extra: nested(MAX_JSON_DEPTH - 1),
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));

    for (const depth of [MAX_JSON_DEPTH, 5_000, 60_000]) {
      const id = uniqueId('deep');
      const response = await postWebhook(stack, undefined, {
        rawBody: JSON.stringify({ ...paymentEvent({ id }), extra: 0 }).replace(
          '"extra":0',
          `"extra":${'['.repeat(depth)}${']'.repeat(depth)}`,
        ),
      });
      assertErrorShape(response, 400, 'invalid_event');
      assert.match(String(response.body.message), new RegExp(`deeper than ${MAX_JSON_DEPTH}`));
      assert.equal(await countRows(stack.pool, 'events', id), 0);
    }
  });

  test('a reminder payload nested thousands of levels deep is refused the same way', async () => {
    for (const depth of [MAX_JSON_DEPTH, 5_000, 60_000]) {
      // Written out by hand: JSON.stringify itself overflows at such depths.
      const raw = JSON.stringify(reminderBody({ payload: 0 })).replace(
        '"payload":0',
        `"payload":${'['.repeat(depth)}${']'.repeat(depth)}`,
      );
      const response = await fetch(`${stack.gatewayUrl}/reminders`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${stack.apiToken}`,
          'idempotency-key': uniqueId('deep'),
          'content-type': 'application/json',
        },
        body: raw,
      });
      const body = (await response.json()) as Record<string, unknown>;
      assertErrorShape({ status: response.status, body }, 400, 'invalid_reminder');
      assert.match(String(body.message), new RegExp(`deeper than ${MAX_JSON_DEPTH}`));
    }
  });
});

describe('every ID the API accepts can be read and cancelled through its own routes', () => {
  test('a 200-character event ID: accepted, then read with GET /events/<id>', async () => {
    const id = idOfLength(200, 'pay');
    assert.equal(id.length, 200);
    const accepted = await postWebhook(stack, paymentEvent({ id }));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const read = await get(`/events/${id}`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.event_id, id);
  });

  test('a 200-character Idempotency-Key: scheduled, read with GET and cancelled with DELETE', async () => {
    const key = idOfLength(200, 'rem');
    const created = await remindersApi(stack.gatewayUrl, stack.apiToken, 'POST', '/reminders', {
      key,
      body: reminderBody(),
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const read = await remindersApi(stack.gatewayUrl, stack.apiToken, 'GET', `/reminders/${key}`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.delivery_id, key);
    assert.equal(read.body.status, 'scheduled');
    const cancelled = await remindersApi(stack.gatewayUrl, stack.apiToken, 'DELETE', `/reminders/${key}`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.status, 'cancelled');
  });

  test('an ID one character too long is refused at creation and at every route, without echoing it', async () => {
    const long = idOfLength(201, 'long');
    const webhook = await postWebhook(stack, paymentEvent({ id: long }));
    assertErrorShape(webhook, 400, 'invalid_event', long);
    const reminder = await remindersApi(stack.gatewayUrl, stack.apiToken, 'POST', '/reminders', {
      key: long,
      body: reminderBody(),
    });
    assertErrorShape(reminder, 400, 'invalid_reminder', long);
    assertIssueAt(reminder, 'headers.idempotency-key');
    assertErrorShape(await get(`/events/${long}`), 400, 'invalid_event', long);
    assertErrorShape(
      await remindersApi(stack.gatewayUrl, stack.apiToken, 'GET', `/reminders/${long}`),
      400,
      'invalid_reminder',
      long,
    );
  });
});

describe('the target guard at scheduling, through the API', () => {
  test('a gateway without SETTLE_ALLOW_PRIVATE_TARGETS refuses special-purpose targets in any spelling', async () => {
    const strict = buildGateway({
      pool: stack.pool,
      client: stack.client,
      taskQueue: stack.taskQueue,
      webhookSecrets: [stack.secret],
      apiToken: stack.apiToken,
      logger,
      allowPrivateTargets: false,
    });
    await strict.listen({ port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${(strict.server.address() as AddressInfo).port}`;
      for (const target of [
        'http://0x7f.1/hook',
        'http://2130706433/hook',
        'http://0177.0.0.1/hook',
        'http://198.51.100.7/hook',
        'http://192.0.2.1/hook',
        'http://198.18.0.1/hook',
        'http://localhost:9/hook',
      ]) {
        const key = uniqueId('ssrf');
        const response = await remindersApi(url, stack.apiToken, 'POST', '/reminders', {
          key,
          body: reminderBody({ webhook_url: target }),
        });
        assertErrorShape(response, 400, 'invalid_reminder');
        assertIssueAt(response, 'webhook_url');
      }
    } finally {
      await strict.close();
    }
  });
});

describe('a known event ID is decided before the type filter', () => {
  test('the same payload is a duplicate; another type, handled or ignored, is a 409', async () => {
    const id = uniqueId('known');
    const original = paymentEvent({ id, type: 'payment.captured' });
    assert.equal((await postWebhook(stack, original)).status, 202);
    const again = await postWebhook(stack, original);
    assert.equal(again.status, 200);
    assert.equal(again.body.status, 'duplicate');
    for (const type of ['payment.disputed', 'payment.settled', 'charge.refund.updated']) {
      const response = await postWebhook(stack, { ...original, type });
      assertErrorShape(response, 409, 'idempotency_key_reused', id);
    }
    const { rows } = await stack.pool.query<{ type: string }>('SELECT type FROM events WHERE event_id = $1', [
      id,
    ]);
    assert.deepEqual(rows, [{ type: 'payment.captured' }]);
    const conflicts = await stack.pool.query('SELECT 1 FROM conflicts WHERE event_id = $1', [id]);
    assert.equal(conflicts.rows.length, 3);
  });

  test('an unknown ID with an ignored type is still acknowledged as ignored', async () => {
    const id = uniqueId('new');
    const response = await postWebhook(stack, paymentEvent({ id, type: 'payment.disputed' }));
    assert.deepEqual(response.body, { status: 'ignored', event_id: id });
  });
});

describe("the framework's own statuses answer the documented error body", () => {
  test('404: no such route', async () => {
    assertErrorShape(await get('/no/such/route/pay_secret_id'), 404, 'not_found', 'pay_secret_id');
  });

  test('405: a method a route does not take', async () => {
    const response = await fetch(`${stack.gatewayUrl}/reminders/rem_1`, { method: 'PUT' });
    assertErrorShape(
      { status: response.status, body: (await response.json()) as Record<string, unknown> },
      405,
      'method_not_allowed',
    );
    assert.equal(response.headers.get('allow'), 'GET, DELETE');
  });

  test('413 and 415 on /reminders', async () => {
    const big = await remindersApi(stack.gatewayUrl, stack.apiToken, 'POST', '/reminders', {
      key: uniqueId('big'),
      body: reminderBody({ payload: 'x'.repeat(300 * 1024) }),
    });
    assertErrorShape(big, 413, 'payload_too_large');
    const text = await fetch(`${stack.gatewayUrl}/reminders`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.apiToken}`,
        'idempotency-key': 'k1',
        'content-type': 'text/plain',
      },
      body: 'hello',
    });
    assertErrorShape(
      { status: text.status, body: (await text.json()) as Record<string, unknown> },
      415,
      'unsupported_media_type',
    );
  });

  // Whatever the gateway refuses before it has read the body must still reach the client: a client
  // (or a provider's proxy) that reads only once it has sent the whole body gets the 4xx, never a
  // reset. Sizes past the limit, framed by length or chunked, on every route that takes a body.
  const BIG = 300 * 1024;
  const refusedBeforeTheBody: [string, string, string | undefined, number, number, string][] = [
    ['POST', '/webhooks/payments', 'application/json', BIG, 413, 'payload_too_large'],
    ['POST', '/webhooks/payments', 'application/json', 8 * 1024 * 1024, 413, 'payload_too_large'],
    ['POST', '/webhooks/payments', 'application/x-www-form-urlencoded', BIG, 415, 'unsupported_media_type'],
    ['POST', '/webhooks/payments', 'text/plain', 2 * 1024 * 1024, 415, 'unsupported_media_type'],
    ['POST', '/webhooks/payments', undefined, BIG, 415, 'unsupported_media_type'],
    ['PUT', '/webhooks/payments', 'application/json', BIG, 413, 'payload_too_large'],
    ['POST', '/webhooks/stripe', 'application/json', 2 * 1024 * 1024, 413, 'payload_too_large'],
    ['POST', '/webhooks/adyen', 'application/json', BIG, 413, 'payload_too_large'],
    ['POST', '/reminders', 'application/json', BIG, 413, 'payload_too_large'],
    ['POST', '/no/such/route', 'application/json', BIG, 413, 'payload_too_large'],
  ];
  for (const [method, path, type, size, status, error] of refusedBeforeTheBody) {
    for (const framing of ['content-length', 'chunked'] as const) {
      test(`${status} reaches a client still sending: ${method} ${path}, ${type ?? 'no type'}, ${size / 1024} KiB, ${framing}`, async () => {
        const response = await sendWholeBodyThenRead(method, path, type, size, framing);
        assertErrorShape(response, status, error);
      });
    }
  }

  test('a refused sender that stops mid-body gets its 413, then the gateway closes the connection', async () => {
    const { port } = new URL(stack.gatewayUrl);
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const closed = new Promise<void>((resolve, reject) => {
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    // A declared gigabyte, of which a megabyte comes: the answer must not wait for the rest, and
    // the connection must not stay open for it.
    socket.write(
      'POST /webhooks/payments HTTP/1.1\r\nhost: settle.test\r\ncontent-type: application/json\r\n' +
        `content-length: ${1024 ** 3}\r\n\r\n`,
    );
    socket.write(Buffer.alloc(1024 * 1024, 'x'));
    await closed;
    assert.match(received, /^HTTP\/1\.1 413 /);
    assert.match(received, /"error":"payload_too_large"/);
  });

  test('414: a path parameter longer than any ID, without echoing it', async () => {
    const long = 'L'.repeat(600);
    assertErrorShape(await get(`/events/${long}`), 414, 'uri_too_long', long);
    assertErrorShape(
      await remindersApi(stack.gatewayUrl, stack.apiToken, 'DELETE', `/reminders/${long}`),
      414,
      'uri_too_long',
      long,
    );
  });

  test('431: headers (the URL included) past 16 KiB, without echoing them', async () => {
    const huge = `pay_${'H'.repeat(20 * 1024)}`;
    const viaHeader = await get('/events/pay_1', { 'x-padding': huge });
    assertErrorShape(viaHeader, 431, 'headers_too_large', huge);
    const viaUrl = await rawRequest(`GET /events/${huge} HTTP/1.1\r\nhost: x\r\n\r\n`);
    assertErrorShape(viaUrl, 431, 'headers_too_large', huge);
  });

  test('500: a real internal failure (the reminders table is gone) answers the documented body', async () => {
    // A gateway of its own on a database whose schema is broken: PostgreSQL answers 42P01, a bug
    // class, neither the request's fault (400) nor PostgreSQL being down (503).
    const broken = await createTestDatabase();
    await broken.pool.query('DROP TABLE reminder_attempts, reminders CASCADE');
    const app = buildGateway({
      pool: broken.pool,
      client: stack.client,
      taskQueue: stack.taskQueue,
      webhookSecrets: [stack.secret],
      apiToken: stack.apiToken,
      logger,
    });
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const key = uniqueId('rem');
      const response = await remindersApi(url, stack.apiToken, 'GET', `/reminders/${key}`);
      assertErrorShape(response, 500, 'internal_error', key);
    } finally {
      await app.close();
      await broken.drop();
    }
  });
});

test('an accepted poison-free event is stored and reconciled', async () => {
  const id = uniqueId('ok');
  const response = await postWebhook(stack, { ...paymentEvent({ id }), note: 'é😀\t\n' });
  assert.equal(response.status, 202);
  await waitFor('the claim', async () => (await countRows(stack.pool, 'claims', id)) === 1, 300_000);
});
