-- A live call takes a slot that a bulk call reserved and has not used yet (docs/delivery.md,
-- "Downstream pressure"): live events go before imported and recovered ones at the gate too, not only
-- in the workers' queues. A bulk call that reserved a later slot than now is listed in `bulk_slots`,
-- and its admission returns that slot as `until`. After its wait it asks whether the slot is still its
-- own (src/activities/target-gate.ts), and asks for another if a live call took it. A live call that
-- would wait takes the earliest listed slot instead of the next one, if it comes sooner. The schedule
-- (`next_slot_at`) does not move: the slots are the same, only their owners change. A slot stays
-- listed for a minute after it has passed, for its owner's question; then it is dropped.
ALTER TABLE target_pressure ADD COLUMN bulk_slots timestamptz[] NOT NULL DEFAULT '{}';

-- 021's function with the change above in its rate limit; the rest is as in 021.
CREATE OR REPLACE FUNCTION settle_admit_target_call(
  p_target text, p_bulk boolean, p_rate double precision, p_max_in_flight integer,
  p_max_wait_ms integer, p_lease_ms integer, p_outbox_id bigint, p_hold_ms integer,
  OUT held text, OUT until timestamptz, OUT wait_ms integer, OUT call_id bigint, OUT probe boolean,
  OUT waits boolean)
LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := clock_timestamp();
  s target_pressure;
  spacing interval;
  slot timestamptz;
  lent timestamptz;
  listed timestamptz[];
  in_flight integer;
BEGIN
  INSERT INTO target_pressure (target) VALUES (p_target) ON CONFLICT (target) DO NOTHING;
  SELECT * INTO s FROM target_pressure WHERE target = p_target FOR UPDATE;
  DELETE FROM target_calls c WHERE c.target = p_target AND c.expires_at <= t;
  probe := s.probing;
  wait_ms := 0;
  waits := false;
  IF s.probing THEN
    IF greatest(s.paused_until, s.next_probe_at) > t THEN
      held := CASE WHEN s.paused_until > t THEN 'paused' ELSE 'failing' END;
      until := greatest(s.paused_until, s.next_probe_at);
    ELSIF EXISTS (SELECT 1 FROM target_calls c WHERE c.target = p_target AND c.probe) THEN
      held := 'probing';
      until := t + make_interval(secs => 1);
    END IF;
  END IF;
  IF held IS NULL AND p_max_in_flight IS NOT NULL THEN
    SELECT count(*) INTO in_flight FROM target_calls c WHERE c.target = p_target;
    -- A bulk call leaves the last slot to live ones.
    IF p_bulk AND p_max_in_flight > 1 THEN
      in_flight := in_flight + 1;
    END IF;
    IF in_flight >= p_max_in_flight THEN
      held := 'in_flight';
      until := t + make_interval(secs => 0.2);
    END IF;
  END IF;
  IF held IS NULL AND p_rate IS NOT NULL THEN
    spacing := make_interval(secs => 1 / p_rate);
    slot := greatest(t, s.next_slot_at);
    listed := ARRAY(SELECT b FROM unnest(s.bulk_slots) b WHERE b > t - interval '1 minute');
    IF NOT p_bulk AND slot > t THEN
      SELECT min(b) INTO lent FROM unnest(listed) b WHERE b > t;
    END IF;
    IF lent < slot THEN
      -- The earliest slot a bulk call reserved: this live call takes it, and the bulk call asks again.
      slot := lent;
      wait_ms := ceil(EXTRACT(EPOCH FROM slot - t) * 1000);
      UPDATE target_pressure SET bulk_slots = array_remove(listed, lent) WHERE target = p_target;
    ELSIF slot - t > make_interval(secs => p_max_wait_ms / 1000.0) THEN
      held := 'rate';
      IF p_bulk THEN
        -- Bulk waiters come back a little faster than the rate, so a slot never waits for one.
        until := greatest(slot, s.bulk_next_at + spacing * 0.8);
        UPDATE target_pressure SET bulk_next_at = until WHERE target = p_target;
      ELSE
        until := slot;
      END IF;
    ELSE
      wait_ms := ceil(EXTRACT(EPOCH FROM slot - t) * 1000);
      IF p_bulk AND slot > t THEN
        listed := listed || slot;
        until := slot;
      END IF;
      UPDATE target_pressure SET next_slot_at = slot + spacing, bulk_slots = listed
       WHERE target = p_target;
    END IF;
  END IF;
  IF held IS NOT NULL THEN
    probe := false;
    IF held IN ('rate', 'in_flight') AND until <= t + make_interval(secs => p_hold_ms / 1000.0) THEN
      waits := true;
      wait_ms := ceil(EXTRACT(EPOCH FROM until - t) * 1000);
      RETURN;
    END IF;
    UPDATE outbox SET attempts = greatest(attempts - 1, 0), updated_at = now(),
                      last_error = 'held by settle: ' || CASE held
                        WHEN 'paused' THEN 'the target asked for a pause (Retry-After)'
                        WHEN 'failing' THEN 'the target is failing; one probe at a time'
                        WHEN 'probing' THEN 'the target is failing; a probe is in flight'
                        WHEN 'in_flight' THEN 'its calls in flight are at SETTLE_' || upper(p_target) || '_MAX_IN_FLIGHT'
                        ELSE 'its calls are at SETTLE_' || upper(p_target) || '_RATE_LIMIT' END
     WHERE outbox_id = p_outbox_id AND status = 'pending';
    RETURN;
  END IF;
  IF probe OR p_max_in_flight IS NOT NULL THEN
    INSERT INTO target_calls (target, probe, expires_at)
    VALUES (p_target, probe, t + make_interval(secs => (wait_ms + p_lease_ms) / 1000.0))
    RETURNING target_calls.call_id INTO call_id;
  END IF;
END $$;
