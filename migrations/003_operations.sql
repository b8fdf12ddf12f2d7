-- Deliveries refused with 409 idempotency_key_reused: an audit of the conflicting payloads, kept
-- apart from the event, which the conflict never changes. One row per (event, conflicting payload).
CREATE TABLE conflicts (
  event_id        text NOT NULL,
  payload_sha256  text NOT NULL,
  payload         jsonb NOT NULL,
  source          text NOT NULL CHECK (source IN ('webhook', 'import', 'replay')),
  deliveries      integer NOT NULL DEFAULT 1,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (event_id, payload_sha256)
);
CREATE INDEX conflicts_last_seen_at ON conflicts (last_seen_at);

-- How often a known event was delivered again (the gateway answered `duplicate`).
ALTER TABLE events
  ADD COLUMN duplicate_deliveries integer NOT NULL DEFAULT 0,
  ADD COLUMN last_duplicate_at timestamptz;

-- How often a reconcile found its claim already there (the second layer refused a repeat).
ALTER TABLE claims
  ADD COLUMN repeat_claims integer NOT NULL DEFAULT 0;
