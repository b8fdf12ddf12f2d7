-- The runs settle started, by the run ID Temporal gave each start (docs/operations.md, "A run settle
-- did not start holds an event's ID"). A start that finds a run under its workflow ID treats it as
-- settle's own only when that run's ID (or the first run ID of its chain, after a reset) is recorded
-- here; anything a run carries (its memo, its input) can be copied onto another run. The row of an
-- admission commits with the event's (or reminder's) row; replay and recovery record theirs as they
-- start. Purged with the claims past the retention. Additive: a process of the previous release
-- neither reads nor writes it.
CREATE TABLE settle_runs (
  workflow_id  text NOT NULL,
  run_id       text NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_id, run_id)
);
CREATE INDEX settle_runs_started_at ON settle_runs (started_at);
