-- Runs settle did not start that held one of its workflow IDs (docs/operations.md, "A run settle did
-- not start holds an event's ID").
--
-- Every run settle starts carries a mark in its memo: a keyed MAC of its workflow ID and what it was
-- started for (an event's payload hash, a reminder's due time), under the key kept here. The key is
-- made once, by the first process that starts a run, and only settle's processes read it: anyone
-- who can reach Temporal's frontend cannot make a mark. A start that finds a run without a valid mark
-- under its ID terminates that run, records it in `unadmitted_runs` (reason `foreign_start`), and
-- starts settle's own. A run settle did not start that fails on its input before its first activity is
-- recorded by the worker (reason `invalid_input`).
CREATE TABLE run_mark_key (
  singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  key         bytea NOT NULL CHECK (octet_length(key) = 32),
  created_at  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE unadmitted_runs DROP CONSTRAINT unadmitted_runs_reason_check;
ALTER TABLE unadmitted_runs ADD CONSTRAINT unadmitted_runs_reason_check
  CHECK (reason IN ('not_stored', 'payload_differs', 'foreign_start', 'invalid_input'));
