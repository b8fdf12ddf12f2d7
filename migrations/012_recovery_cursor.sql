-- Recovering what a provider never delivered (docs/operations.md, "The provider says it sent it").
--
-- An event the recovery sweep (or `settle recover`) admits is stored like any other, its source
-- `recovery`.
ALTER TABLE events DROP CONSTRAINT events_source_check;
ALTER TABLE events ADD CONSTRAINT events_source_check
  CHECK (source IN ('webhook', 'import', 'replay', 'recovery'));
ALTER TABLE conflicts DROP CONSTRAINT conflicts_source_check;
ALTER TABLE conflicts ADD CONSTRAINT conflicts_source_check
  CHECK (source IN ('webhook', 'import', 'replay', 'recovery'));

-- One durable cursor per provider: the newest listed event up to which every event was admitted
-- (or recorded as an exception), in the provider's own order. It only moves forward, and only past
-- events already admitted; the sweep lists from it. The last sweep's outcome is kept beside it for
-- `settle stats`.
CREATE TABLE recovery_cursors (
  provider          text PRIMARY KEY CHECK (provider IN ('stripe', 'adyen')),
  event_id          text,
  event_created_at  timestamptz,
  moved_at          timestamptz,
  last_sweep_at     timestamptz,
  last_sweep_error  text,
  last_listed       integer NOT NULL DEFAULT 0,
  last_recovered    integer NOT NULL DEFAULT 0,
  recovered_total   bigint NOT NULL DEFAULT 0
);

-- A listed event settle refuses (it fails validation) is an exception whose next step differs from
-- a shipment-less one's: the step is kept on the row.
ALTER TABLE provider_exceptions ADD COLUMN next_step text;
