import pg from 'pg';
import type { ReconcileOutcome } from '../domain/lifecycles';
import type { PaymentExpectation, PaymentStatus } from '../domain/payment-rules';
import {
  insertOutboxRows,
  LIST_WITH_INSERTED,
  outboxInsertValues,
  type NewOutboxRow,
  type OutboxEntryRow,
  type StartedOutboxRow,
} from './outbox';
import type { Queryable } from './pool';
import { shiftParameters } from './sql';

// A payment event's claim and the effect it guards, committed together: the event ID's lock, the
// claim with the shipment it locks, the shipment's payment status and hold, and the ledger entries.
// The reconcile and its compensation run every statement here; `settle inspect` and `settle replay`
// read the claim and the ledger.

export type ClaimOutcome = ReconcileOutcome;

export type Claim = {
  eventId: string;
  payloadSha256: string;
  outcome: ClaimOutcome;
  shipmentId: string | null;
  claimedAt: Date;
};

const CLAIM_COLUMNS = `event_id AS "eventId", payload_sha256 AS "payloadSha256", outcome,
  shipment_id AS "shipmentId", claimed_at AS "claimedAt"`;

/**
 * Serialises every transaction that reconciles the same event ID, so the claim check and the
 * mutation cannot interleave; the primary key on claims remains the backstop. Free in a transaction
 * that began holding it (beginLockingEventId).
 */
export async function lockEventId(db: Queryable, eventId: string): Promise<void> {
  if (openedHolding.get(db) === eventId) return;
  await db.query({
    name: 'claims.lock_event_id',
    text: 'SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))',
    values: [eventId],
  });
}

/** The event ID whose lock each open transaction took as it began, until it ends (withTransaction). */
const openedHolding = new WeakMap<Queryable, string>();

/**
 * BEGIN and lockEventId in one round trip: one simple query, with the ID as an escaped literal (a
 * simple query has no parameters). An ID no query text can carry (a NUL byte) takes the two
 * statements, and PostgreSQL refuses it as before. Until endTransaction, lockEventId of this ID on
 * this client costs nothing.
 */
export async function beginLockingEventId(client: pg.PoolClient, eventId: string): Promise<void> {
  if (eventId.includes('\0')) {
    await client.query('BEGIN');
    await lockEventId(client, eventId);
  } else {
    await client.query(
      `BEGIN; SELECT pg_advisory_xact_lock(hashtextextended(${pg.escapeLiteral(eventId)}::text, 0))`,
    );
  }
  openedHolding.set(client, eventId);
}

/** The transaction on `client` ended: its lock went with it. */
export function endTransaction(client: pg.PoolClient): void {
  openedHolding.delete(client);
}

export async function findClaim(db: Queryable, eventId: string): Promise<Claim | undefined> {
  const { rows } = await db.query<Claim>({
    name: 'claims.find',
    text: `SELECT ${CLAIM_COLUMNS} FROM claims WHERE event_id = $1::text`,
    values: [eventId],
  });
  return rows[0];
}

/**
 * What the reconcile decides on, in one round trip, after the event ID's lock: the claim, if any, the
 * payload hash its `events` row was stored with, if it was, and the shipment the event names, locked
 * FOR UPDATE until the transaction ends (its newest version, whatever this statement's snapshot), with
 * what it expects to be paid. The claim and the stored hash are read from a snapshot taken after the
 * lock was granted (the lock is the statement before), so they see every earlier reconcile of the ID.
 */
export async function findClaimAndLockShipment(
  db: Queryable,
  eventId: string,
  shipmentId: string,
): Promise<{
  claim: Claim | undefined;
  storedPayloadSha256: string | undefined;
  shipment: LockedShipment | undefined;
}> {
  const { rows } = await db.query<
    Partial<Claim> & { storedPayloadSha256: string | null; shipment: ShipmentExpectingRow | null }
  >({
    name: 'claims.find_and_lock_shipment',
    text: `WITH shipment AS MATERIALIZED (
             SELECT ${EXPECTING_COLUMNS} FROM shipments WHERE shipment_id = $2::text FOR UPDATE)
           SELECT c.event_id AS "eventId", c.payload_sha256 AS "payloadSha256", c.outcome,
                  c.shipment_id AS "shipmentId", c.claimed_at AS "claimedAt",
                  e.payload_sha256 AS "storedPayloadSha256",
                  (SELECT to_json(s) FROM shipment s) AS shipment
             FROM (VALUES ($1::text)) AS k (event_id)
             LEFT JOIN claims c ON c.event_id = k.event_id
             LEFT JOIN events e ON e.event_id = k.event_id`,
    values: [eventId, shipmentId],
  });
  const { storedPayloadSha256, shipment, ...claim } = rows[0]!;
  return {
    claim: claim.eventId === null || claim.eventId === undefined ? undefined : (claim as Claim),
    storedPayloadSha256: storedPayloadSha256 ?? undefined,
    shipment: shipment === null ? undefined : lockedShipment(shipment),
  };
}

/** A claim to insert. */
export type NewClaim = {
  eventId: string;
  payloadSha256: string;
  outcome: ClaimOutcome;
  shipmentId: string;
  /** Why a `needs_review` outcome needs review (a payment that does not match its shipment). */
  reviewReason?: string;
};

/**
 * The claim and the event's new outbox rows in one statement (both commit with the transaction or
 * neither does); returns all of the event's rows in order, as insertOutboxRowsAndList does, and the
 * seconds from the event's receipt (its `events` row) to this claim, the event-to-commit latency, or
 * undefined for an event that has no `events` row.
 *
 * `startKey`: the idempotency key of the row the caller will call first. It is stored with that attempt
 * counted, and returned as `started` with its target's state, as startOutboxAttempt returns a row: the
 * first delivery then needs no statement, and no commit, of its own.
 */
export async function insertClaimAndOutbox(
  db: Queryable,
  claim: NewClaim,
  rows: NewOutboxRow[],
  startKey?: string,
): Promise<{
  secondsSinceReceipt: number | undefined;
  outbox: OutboxEntryRow[];
  started?: StartedOutboxRow;
}> {
  type Listed = {
    seconds: number | null;
    started: (Omit<StartedOutboxRow, 'createdAt'> & { createdAt: string }) | null;
  };
  const { rows: listed } = await db.query<Listed & Nullable<OutboxEntryRow>>({
    name: 'claims.insert_with_outbox',
    text: `WITH claim AS (
             INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id, review_reason)
             VALUES ($1::text, $7::text, $8::text, $2::text, $9::text)
             RETURNING EXTRACT(EPOCH FROM claimed_at -
               (SELECT received_at FROM events WHERE event_id = $1::text))::float8 AS seconds),
           inserted AS (${insertOutboxRows('$10')}),
           listed AS (${LIST_WITH_INSERTED}),
           started AS (
             SELECT i.*, $1::text AS "eventId", $2::text AS "shipmentId", NULL::text AS "lastError",
                    NULL::timestamptz AS "deliveredAt",
                    coalesce((SELECT tp.probing FROM target_pressure tp WHERE tp.target = i.target), false)
                      AS "targetTroubled"
               FROM inserted i WHERE i.attempts = 1)
           SELECT (SELECT seconds FROM claim) AS seconds, (SELECT to_json(s) FROM started s) AS started,
                  listed.*
             FROM (VALUES (1)) AS one (n) LEFT JOIN listed ON true
            ORDER BY listed."outboxId"`,
    values: [
      ...outboxInsertValues(claim, rows),
      claim.payloadSha256,
      claim.outcome,
      claim.reviewReason ?? null,
      startKey ?? null,
    ],
  });
  const outbox = listed.flatMap(({ seconds: _, started: __, ...row }) =>
    row.outboxId === null ? [] : [row as OutboxEntryRow],
  );
  const started = listed[0]?.started;
  return {
    secondsSinceReceipt: listed[0]?.seconds ?? undefined,
    outbox,
    ...(started ? { started: { ...started, createdAt: new Date(started.createdAt) } } : {}),
  };
}

type Nullable<T> = { [K in keyof T]: T[K] | null };

export async function updateClaimOutcome(
  db: Queryable,
  eventId: string,
  outcome: ClaimOutcome,
  reviewReason?: string,
): Promise<void> {
  await db.query(
    `UPDATE claims SET outcome = $2::text, review_reason = coalesce($3::text, review_reason), updated_at = now()
      WHERE event_id = $1::text`,
    [eventId, outcome, reviewReason ?? null],
  );
}

/** Unmatched events whose shipment now exists: what `settle replay --unmatched` applies. Oldest first. */
export async function listReplayableUnmatched(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ event_id: string }>(
    `SELECT c.event_id FROM claims c JOIN shipments s USING (shipment_id)
      WHERE c.outcome = 'unmatched'
      ORDER BY c.claimed_at, c.event_id`,
  );
  return rows.map((row) => row.event_id);
}

// The shipment a claim locks, its payment status and its hold.

export type Shipment = {
  shipmentId: string;
  paymentStatus: PaymentStatus;
  paymentId: string | null;
  holdStatus: 'held' | 'released';
};

/** A shipment's columns, as findShipment (shipments.ts) and the reconcile read them. */
export const SHIPMENT_COLUMNS = `shipment_id AS "shipmentId", payment_status AS "paymentStatus", payment_id AS "paymentId",
  hold_status AS "holdStatus"`;

/** The shipment's columns with what it expects to be paid, as the reconcile reads it (findClaimAndLockShipment). */
const EXPECTING_COLUMNS = `${SHIPMENT_COLUMNS}, expected_amount::text AS "expectedAmount",
  expected_currency AS "expectedCurrency"`;

/** A shipment read with EXPECTING_COLUMNS. */
type ShipmentExpectingRow = Shipment & {
  expectedAmount: string | null;
  expectedCurrency: string | null;
};

/** A shipment locked for a reconcile, with what it expects to be paid. */
export type LockedShipment = Shipment & { expected: PaymentExpectation };

/** A row read with EXPECTING_COLUMNS, its expectation as numbers. */
function lockedShipment(row: ShipmentExpectingRow): LockedShipment {
  const { expectedAmount, expectedCurrency, ...shipment } = row;
  return {
    ...shipment,
    expected: {
      amount: expectedAmount === null ? null : Number(expectedAmount),
      currency: expectedCurrency,
    },
  };
}

/** $1 the shipment, $2 its new payment status, $3 the payment, $4 the event that set it. */
const SET_PAYMENT_STATUS = `UPDATE shipments
              SET payment_status = $2::text, payment_id = COALESCE(payment_id, $3::text),
                  status_event_id = $4::text, updated_at = now()
            WHERE shipment_id = $1::text`;

/** The carrier's hold as settle last saw it succeed: released by the release call, held again by its compensation. */
export async function setHoldStatus(
  db: Queryable,
  shipmentId: string,
  holdStatus: Shipment['holdStatus'],
): Promise<void> {
  await db.query(
    `UPDATE shipments SET hold_status = $2::text, updated_at = now() WHERE shipment_id = $1::text`,
    [shipmentId, holdStatus],
  );
}

// The ledger: append-only entries (capture, refund, reversal).

type LedgerKind = 'capture' | 'refund' | 'reversal';

export type LedgerEntry = {
  entryId: number;
  kind: LedgerKind;
  shipmentId: string;
  paymentId: string;
  eventId: string;
  amount: number;
  currency: string;
  reversesEntryId: number | null;
  createdAt: Date;
};

const LEDGER_COLUMNS = `entry_id AS "entryId", kind, shipment_id AS "shipmentId", payment_id AS "paymentId",
  event_id AS "eventId", amount, currency, reverses_entry_id AS "reversesEntryId", created_at AS "createdAt"`;

/**
 * Appends an entry unless its uniqueness rule already holds one (one capture per payment, one refund
 * per event and one per refund key, one reversal per entry); returns the new entry, or undefined when
 * it already existed. `refundKey` names the provider's refund object (Stripe `re_…`), so two events
 * reporting the same refund append one refund entry.
 */
export async function appendLedgerEntry(
  db: Queryable,
  entry: NewLedgerEntry,
): Promise<LedgerEntry | undefined> {
  const { rows } = await db.query<LedgerEntry>({
    name: 'ledger.append',
    text: INSERT_ENTRY,
    values: entryValues(entry),
  });
  return rows[0];
}

export type NewLedgerEntry = Omit<LedgerEntry, 'entryId' | 'createdAt' | 'reversesEntryId'> & {
  reversesEntryId?: number;
  refundKey?: string;
};

/**
 * A payment's new status on its (locked) shipment and the ledger entry it appends, if any, in one
 * statement: both or neither. Returns the entry as appendLedgerEntry does.
 */
export async function setPaymentStatusAndAppend(
  db: Queryable,
  change: { shipmentId: string; paymentStatus: PaymentStatus; paymentId: string; eventId: string },
  entry: NewLedgerEntry | undefined,
): Promise<LedgerEntry | undefined> {
  const values = [change.shipmentId, change.paymentStatus, change.paymentId, change.eventId];
  if (!entry) {
    await db.query({ name: 'shipments.set_payment_status', text: SET_PAYMENT_STATUS, values });
    return undefined;
  }
  const { rows } = await db.query<LedgerEntry>({
    name: 'ledger.append_with_status',
    text: `WITH status AS (${STATUS_AFTER_ENTRY}) ${INSERT_ENTRY}`,
    values: [...entryValues(entry), ...values],
  });
  return rows[0];
}

const INSERT_ENTRY = `INSERT INTO ledger_entries (kind, shipment_id, payment_id, event_id, amount, currency,
             reverses_entry_id, refund_key)
           VALUES ($1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text, $7::bigint, $8::text)
           ON CONFLICT DO NOTHING
           RETURNING ${LEDGER_COLUMNS}`;

/** SET_PAYMENT_STATUS with its parameters numbered after the entry's eight. */
const STATUS_AFTER_ENTRY = shiftParameters(SET_PAYMENT_STATUS, 8);

function entryValues(entry: NewLedgerEntry) {
  return [
    entry.kind,
    entry.shipmentId,
    entry.paymentId,
    entry.eventId,
    entry.amount,
    entry.currency,
    entry.reversesEntryId ?? null,
    entry.kind === 'refund' ? (entry.refundKey ?? null) : null,
  ];
}

/**
 * The shipment settle recorded `paymentId`'s capture for, from an event whose ID starts with
 * `eventIdPrefix` (one provider's events), or undefined. One row at most: the ledger holds one
 * capture per payment (its unique index is what this reads).
 */
export async function findCapturedShipment(
  db: Queryable,
  paymentId: string,
  eventIdPrefix: string,
): Promise<string | undefined> {
  const { rows } = await db.query<{ shipment_id: string }>(
    `SELECT shipment_id FROM ledger_entries
      WHERE kind = 'capture' AND payment_id = $1::text AND starts_with(event_id, $2::text)`,
    [paymentId, eventIdPrefix],
  );
  return rows[0]?.shipment_id;
}

export async function listLedgerForShipment(db: Queryable, shipmentId: string): Promise<LedgerEntry[]> {
  const { rows } = await db.query<LedgerEntry>(
    `SELECT ${LEDGER_COLUMNS} FROM ledger_entries WHERE shipment_id = $1::text ORDER BY entry_id`,
    [shipmentId],
  );
  return rows;
}

/** The money entries (capture, refund) an event itself appended; reversals are not reversed again. */
export async function listReversibleEntriesForEvent(db: Queryable, eventId: string): Promise<LedgerEntry[]> {
  const { rows } = await db.query<LedgerEntry>(
    `SELECT ${LEDGER_COLUMNS} FROM ledger_entries
      WHERE event_id = $1::text AND kind IN ('capture', 'refund') ORDER BY entry_id`,
    [eventId],
  );
  return rows;
}
