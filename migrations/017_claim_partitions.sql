-- Retention by partition (docs/capacity.md, "Retention by partitions"): claims and events become
-- range-partitioned by week (UTC, Monday 00:00) on claimed_at / received_at, so the purge detaches
-- and drops whole weeks past SETTLE_CLAIM_RETENTION instead of deleting row by row
-- (src/db/partitions.ts).
--
-- Each week is a partition `claims_wYYYYMMDD` / `events_wYYYYMMDD` (the week's Monday) with its own
-- primary key on event_id. There is no primary key on the parents: one would have to include the
-- partition key, (event_id, claimed_at), which says nothing about an ID claimed in two weeks. An
-- event ID stays unique for the whole retention because every writer takes the per-event advisory
-- lock (claims.lockEventId) and looks the ID up across all partitions before inserting
-- (reconcile-payment.ts, events.insertAdmittedEvent); a partition's own key is the backstop inside
-- its week.
--
-- `claims_default` / `events_default` (DEFAULT partitions) hold what no week holds: rows that arrived
-- while their week had no partition (a safety net: the migrator and every purge create this week and
-- the next four ahead, so an insert never fails), open exceptions (unmatched, needs_review) and the
-- events they need, moved out of a week before it is dropped, and rows written with an older
-- timestamp than any week. The purge deletes from them row by row, as it deleted from the whole
-- tables before; settle_ensure_partitions moves a week's rows out of them when it creates the week.
--
-- The migration from the tables of 001–016, with no copy: each old table is renamed to
-- `claims_legacy` / `events_legacy` and attached as the partition FROM (MINVALUE) TO (L), L the
-- Monday after its newest row and after now. ATTACH would scan the table to prove the bound; a
-- CHECK (claimed_at < L), added NOT VALID (no scan) then VALIDATEd, proves it instead. `settle
-- migrate` adds and validates that CHECK before this file's transaction, in transactions of its own
-- (src/db/migrate.ts, prepareClaimPartitions): VALIDATE reads the table under SHARE UPDATE EXCLUSIVE,
-- so the gateway and the workers keep writing while it runs, and this transaction finds the CHECK
-- valid and only renames and attaches (catalog changes, no scan, an instant's ACCESS EXCLUSIVE
-- lock). A database migrated without that step (an empty one: every test database) validates here.
-- The old primary keys and indexes stay the legacy partitions' own (no index is rebuilt); the legacy
-- partitions are dropped like a week once L is past the retention. An empty old table is simply
-- dropped. The parents take no storage options (PostgreSQL refuses them on a partitioned table):
-- migration 010's autovacuum settings move to the DEFAULT partitions, the ones the purge deletes from.

-- Creates the week partition starting at week_start (a Monday 00:00 UTC) of `parent` (claims or
-- events), unless it exists or overlaps the legacy partition; rows the DEFAULT partition holds for
-- that week move into it first (ATTACH would refuse them). True when it created the partition.
CREATE FUNCTION settle_create_week_partition(parent text, week_start timestamptz) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  key text := CASE parent WHEN 'claims' THEN 'claimed_at' WHEN 'events' THEN 'received_at' END;
  name text := parent || '_w' || to_char(week_start AT TIME ZONE 'UTC', 'YYYYMMDD');
  week_end timestamptz := week_start + interval '7 days';
  legacy_end timestamptz;
BEGIN
  IF key IS NULL THEN
    RAISE EXCEPTION 'settle_create_week_partition: % is not partitioned by week', parent;
  END IF;
  IF to_regclass(name) IS NOT NULL THEN
    RETURN false;
  END IF;
  SELECT substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']+)''\)')::timestamptz
    INTO legacy_end
    FROM pg_class c
   WHERE c.oid = to_regclass(parent || '_legacy') AND c.relispartition;
  IF legacy_end IS NOT NULL AND week_start < legacy_end THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name, parent);
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (event_id)', name, name || '_pkey');
  EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= %L AND %I < %L RETURNING *)
                  INSERT INTO %I SELECT * FROM moved',
                 parent || '_default', key, week_start, key, week_end, name);
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                 parent, name, week_start, week_end);
  RETURN true;
END $$;

-- The week partitions of claims and events from the week holding from_time to `weeks` weeks after
-- it: what the migrator and every purge run call (from now(), 4 weeks ahead). Returns how many it
-- created.
CREATE FUNCTION settle_ensure_partitions(from_time timestamptz, weeks integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  first_week timestamptz := date_trunc('week', from_time AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  created integer := 0;
  parent text;
BEGIN
  -- Two purges (or a purge and a migrator) at once create each week once.
  PERFORM pg_advisory_xact_lock(hashtextextended('settle_ensure_partitions', 0));
  FOREACH parent IN ARRAY ARRAY['claims', 'events'] LOOP
    FOR i IN 0..weeks LOOP
      IF settle_create_week_partition(parent, first_week + i * interval '7 days') THEN
        created := created + 1;
      END IF;
    END LOOP;
  END LOOP;
  RETURN created;
END $$;

DO $$
DECLARE
  t record;
  legacy_end timestamptz;
  newest timestamptz;
  has_rows boolean;
BEGIN
  FOR t IN SELECT * FROM (VALUES ('claims', 'claimed_at'), ('events', 'received_at')) AS v (parent, key) LOOP
    EXECUTE format('ALTER TABLE %I RENAME TO %I', t.parent, t.parent || '_legacy');
    EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I',
                   t.parent || '_legacy', t.parent || '_pkey', t.parent || '_legacy_pkey');
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
                    PARTITION BY RANGE (%I)', t.parent, t.parent || '_legacy', t.key);
    -- LIKE copied the legacy bound, if prepareClaimPartitions added it: the legacy table's alone.
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT IF EXISTS %I', t.parent, t.parent || '_before_partitions');
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', t.parent || '_legacy') INTO has_rows;
    IF NOT has_rows THEN
      EXECUTE format('DROP TABLE %I', t.parent || '_legacy');
      CONTINUE;
    END IF;
    -- The bound prepareClaimPartitions validated, if it ran; else one chosen and validated here.
    SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''')::timestamptz INTO legacy_end
      FROM pg_constraint
     WHERE conrelid = (t.parent || '_legacy')::regclass AND conname = t.parent || '_before_partitions'
       AND convalidated;
    IF legacy_end IS NULL THEN
      EXECUTE format('ALTER TABLE %I DROP CONSTRAINT IF EXISTS %I',
                     t.parent || '_legacy', t.parent || '_before_partitions');
      EXECUTE format('SELECT max(%I) FROM %I', t.key, t.parent || '_legacy') INTO newest;
      legacy_end := (date_trunc('week', greatest(now(), newest) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                    + interval '7 days';
      EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I < %L) NOT VALID',
                     t.parent || '_legacy', t.parent || '_before_partitions', t.key, legacy_end);
      EXECUTE format('ALTER TABLE %I VALIDATE CONSTRAINT %I',
                     t.parent || '_legacy', t.parent || '_before_partitions');
    END IF;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                   t.parent, t.parent || '_legacy', legacy_end);
    -- The partition bound holds it now.
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I',
                   t.parent || '_legacy', t.parent || '_before_partitions');
  END LOOP;
END $$;

-- Partitioned indexes: attached to the legacy partitions' matching indexes (no build), created on
-- every new partition.
ALTER INDEX IF EXISTS claims_claimed_at RENAME TO claims_legacy_claimed_at;
ALTER INDEX IF EXISTS claims_exceptions RENAME TO claims_legacy_exceptions;
ALTER INDEX IF EXISTS events_received_at RENAME TO events_legacy_received_at;
CREATE INDEX claims_claimed_at ON claims (claimed_at);
CREATE INDEX claims_exceptions ON claims (outcome) WHERE outcome IN ('unmatched', 'needs_review');
CREATE INDEX events_received_at ON events (received_at);

CREATE TABLE claims_default PARTITION OF claims DEFAULT;
ALTER TABLE claims_default ADD CONSTRAINT claims_default_pkey PRIMARY KEY (event_id);
CREATE TABLE events_default PARTITION OF events DEFAULT;
ALTER TABLE events_default ADD CONSTRAINT events_default_pkey PRIMARY KEY (event_id);
ALTER TABLE claims_default SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_analyze_scale_factor = 0.01
);
ALTER TABLE events_default SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_analyze_scale_factor = 0.01
);

SELECT settle_ensure_partitions(now(), 4);
