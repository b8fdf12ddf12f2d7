-- A payment run the reconcile refused because settle's own door (gateway, import, replay, recovery)
-- never stored its event with that payload: started around settle, straight on Temporal's frontend.
-- Nothing of it was applied; it is kept as an `unadmitted_run` exception, one row per run, and holds
-- what identifies the run and its input (the payload's hash, never the payload).
CREATE TABLE unadmitted_runs (
  workflow_id     text NOT NULL,
  run_id          text NOT NULL,
  event_id        text NOT NULL,
  payload_sha256  text NOT NULL,
  shipment_id     text,
  event_type      text NOT NULL,
  -- not_stored: no events row for the ID; payload_differs: one with another payload hash.
  reason          text NOT NULL CHECK (reason IN ('not_stored', 'payload_differs')),
  attempts        integer NOT NULL DEFAULT 1,
  first_at        timestamptz NOT NULL DEFAULT now(),
  last_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_id, run_id)
);
CREATE INDEX unadmitted_runs_by_event ON unadmitted_runs (event_id);
