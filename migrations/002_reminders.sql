-- Renewal reminders: one row per delivery ID (the producer's Idempotency-Key). The row, not Temporal,
-- decides whether a reminder may still be delivered or cancelled.
CREATE TABLE reminders (
  delivery_id      text PRIMARY KEY,
  contract_id      text NOT NULL,
  due_at           timestamptz NOT NULL,
  webhook_url      text NOT NULL,
  payload          jsonb NOT NULL,
  -- SHA-256 of the canonical request body: tells a duplicate POST from a reused key.
  request_sha256   text NOT NULL,
  workflow_id      text NOT NULL,
  state            text NOT NULL DEFAULT 'scheduled'
                   CHECK (state IN ('scheduled', 'processing', 'succeeded', 'failed', 'cancelled')),
  attempts         integer NOT NULL DEFAULT 0,
  -- While `processing`: until when the current attempt owns the delivery. Another attempt may take
  -- over only after it passes (the owner's worker vanished).
  lease_expires_at timestamptz,
  last_error       text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  completed_at     timestamptz,
  CHECK (state <> 'processing' OR attempts > 0)
);
CREATE INDEX reminders_open_by_due ON reminders (due_at) WHERE state IN ('scheduled', 'processing');

-- Every delivery attempt, kept for GET /reminders/<id> and for operators.
CREATE TABLE reminder_attempts (
  delivery_id      text NOT NULL REFERENCES reminders (delivery_id),
  attempt          integer NOT NULL,
  started_at       timestamptz NOT NULL DEFAULT now(),
  lease_expires_at timestamptz NOT NULL,
  finished_at      timestamptz,
  status_code      integer,
  error            text,
  PRIMARY KEY (delivery_id, attempt)
);
