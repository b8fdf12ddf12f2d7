-- Shipments whose payment status settle reconciles.
CREATE TABLE shipments (
  shipment_id     text PRIMARY KEY,
  payment_status  text NOT NULL DEFAULT 'pending'
                  CHECK (payment_status IN ('pending', 'authorized', 'captured', 'settled', 'refunded', 'failed')),
  payment_id      text,
  hold_status     text NOT NULL DEFAULT 'held' CHECK (hold_status IN ('held', 'released')),
  status_event_id text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Every payment event the gateway (or an import) accepted: the source for inspect and replay.
-- A row commits only once its workflow start is durable.
CREATE TABLE events (
  event_id        text PRIMARY KEY,
  type            text NOT NULL,
  payload         jsonb NOT NULL,
  payload_sha256  text NOT NULL,
  workflow_id     text NOT NULL,
  source          text NOT NULL DEFAULT 'webhook' CHECK (source IN ('webhook', 'import', 'replay')),
  received_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_received_at ON events (received_at);

-- The durable claim. Written in the same transaction as the business mutation; its existence is
-- what decides whether an effect commits. Kept for SETTLE_CLAIM_RETENTION.
CREATE TABLE claims (
  event_id        text PRIMARY KEY,
  payload_sha256  text NOT NULL,
  outcome         text NOT NULL CHECK (outcome IN ('applied', 'stale', 'unmatched', 'needs_review')),
  shipment_id     text,
  claimed_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX claims_claimed_at ON claims (claimed_at);
CREATE INDEX claims_exceptions ON claims (outcome) WHERE outcome IN ('unmatched', 'needs_review');

-- Append-only money ledger.
CREATE TABLE ledger_entries (
  entry_id        bigserial PRIMARY KEY,
  kind            text NOT NULL CHECK (kind IN ('capture', 'refund', 'reversal')),
  shipment_id     text NOT NULL REFERENCES shipments (shipment_id),
  payment_id      text NOT NULL,
  event_id        text NOT NULL,
  amount          bigint NOT NULL CHECK (amount >= 0),
  currency        char(3) NOT NULL,
  reverses_entry_id bigint REFERENCES ledger_entries (entry_id),
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX ledger_one_capture_per_payment ON ledger_entries (payment_id) WHERE kind = 'capture';
CREATE UNIQUE INDEX ledger_one_refund_per_event ON ledger_entries (event_id) WHERE kind = 'refund';
CREATE UNIQUE INDEX ledger_one_reversal_per_entry ON ledger_entries (reverses_entry_id) WHERE kind = 'reversal';
CREATE INDEX ledger_by_shipment ON ledger_entries (shipment_id, entry_id);

CREATE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_entries is append-only: % refused', TG_OP USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only();

-- Downstream effects, written with the mutation and delivered afterwards with their idempotency key.
CREATE TABLE outbox (
  outbox_id       bigserial PRIMARY KEY,
  event_id        text NOT NULL,
  shipment_id     text NOT NULL,
  target          text NOT NULL CHECK (target IN ('carrier', 'erp')),
  action          text NOT NULL,
  idempotency_key text NOT NULL UNIQUE,
  body            jsonb NOT NULL,
  status          text NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'delivered', 'failed', 'compensated')),
  attempts        integer NOT NULL DEFAULT 0,
  last_error      text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  delivered_at    timestamptz
);
CREATE INDEX outbox_by_event ON outbox (event_id, outbox_id);
CREATE INDEX outbox_pending ON outbox (created_at) WHERE status = 'pending';
