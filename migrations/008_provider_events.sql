-- Payment provider adapters (Stripe, Adyen).
--
-- One refund per refund object: a provider can report the same refund in two events (Stripe's
-- charge.refunded and refund.created), each with its own event ID. The refund's own ID (`re_…`,
-- Adyen's refund pspReference) is kept on the ledger entry, and at most one refund entry exists
-- per refund key. Events without a refund key keep the rule of 001 (one refund per event).
ALTER TABLE ledger_entries ADD COLUMN refund_key text;
CREATE UNIQUE INDEX ledger_one_refund_per_refund_key ON ledger_entries (refund_key)
  WHERE kind = 'refund' AND refund_key IS NOT NULL;

-- A provider event settle cannot turn into a payment event for a shipment (no shipment named in it):
-- answered 2xx so the provider stops retrying, and kept here as an `unmatched` exception.
CREATE TABLE provider_exceptions (
  event_id       text PRIMARY KEY,
  provider       text NOT NULL CHECK (provider IN ('stripe', 'adyen')),
  provider_type  text NOT NULL,
  reason         text NOT NULL,
  payload        jsonb NOT NULL,
  deliveries     integer NOT NULL DEFAULT 1,
  first_seen_at  timestamptz NOT NULL DEFAULT now(),
  last_seen_at   timestamptz NOT NULL DEFAULT now()
);
