-- Downstream pressure (docs/delivery.md, "Downstream pressure"): one row per delivery target holding
-- what every worker process shares about it, and the calls in flight as leases that expire, so that a
-- worker killed mid-call does not keep its slot. Both functions lock the target's row: admission and
-- the record of an answer are each one statement, serialized per target.
CREATE TABLE target_pressure (
  target          text PRIMARY KEY,
  -- The rate limit's schedule (a virtual-clock token bucket): the earliest time the next call may go.
  next_slot_at    timestamptz NOT NULL DEFAULT '-infinity',
  -- Where the next refused bulk call is told to come back: bulk waiters return spread out, not at once.
  bulk_next_at    timestamptz NOT NULL DEFAULT '-infinity',
  -- A 429/503 Retry-After from the target: no call before this time.
  paused_until    timestamptz,
  -- Set by a pause or a failure, cleared by a success: only one probe at a time goes out meanwhile.
  probing         boolean NOT NULL DEFAULT false,
  next_probe_at   timestamptz,
  -- The first failure (5xx, timeout, refused connection) since the last success.
  failing_since   timestamptz,
  failures        integer NOT NULL DEFAULT 0,
  -- SETTLE_<TARGET>_OPEN_AFTER as the worker that recorded the failure reads it: open once it has passed.
  open_after_ms   bigint,
  last_error      text,
  last_success_at timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE target_calls (
  call_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  target     text NOT NULL,
  probe      boolean NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX target_calls_target ON target_calls (target, expires_at);

-- Admits one call to a target, or says why it is held and until when. `held` is null when admitted:
-- then `wait_ms` is how long the caller waits for its slot and `call_id` its lease (when one is kept:
-- a probe, or a target with a limit on calls in flight). A held outbox row does not count the attempt
-- its start counted (`p_outbox_id`), and notes why it waits.
CREATE FUNCTION settle_admit_target_call(
  p_target text, p_bulk boolean, p_rate double precision, p_max_in_flight integer,
  p_max_wait_ms integer, p_lease_ms integer, p_outbox_id bigint,
  OUT held text, OUT until timestamptz, OUT wait_ms integer, OUT call_id bigint, OUT probe boolean)
LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := clock_timestamp();
  s target_pressure;
  spacing interval;
  slot timestamptz;
  in_flight integer;
BEGIN
  INSERT INTO target_pressure (target) VALUES (p_target) ON CONFLICT (target) DO NOTHING;
  SELECT * INTO s FROM target_pressure WHERE target = p_target FOR UPDATE;
  DELETE FROM target_calls c WHERE c.target = p_target AND c.expires_at <= t;
  probe := s.probing;
  wait_ms := 0;
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
    IF slot - t > make_interval(secs => p_max_wait_ms / 1000.0) THEN
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
      UPDATE target_pressure SET next_slot_at = slot + spacing WHERE target = p_target;
    END IF;
  END IF;
  IF held IS NOT NULL THEN
    probe := false;
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

-- Records how an admitted call to a target ended: `success` (any answer but a retryable failure: the
-- target is up) closes it; `pause` (429/503 with Retry-After) holds every call until `p_pause_ms` has
-- passed; `failure` (5xx, timeout, refused connection) starts or continues its failing period, and
-- the next probe waits a backoff that grows with the failures to `p_probe_max_ms`. The call's lease,
-- if any, is released.
CREATE FUNCTION settle_record_target_answer(
  p_target text, p_call_id bigint, p_answer text, p_pause_ms bigint, p_open_after_ms bigint,
  p_probe_max_ms bigint, p_error text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := clock_timestamp();
BEGIN
  INSERT INTO target_pressure (target) VALUES (p_target) ON CONFLICT (target) DO NOTHING;
  PERFORM 1 FROM target_pressure WHERE target = p_target FOR UPDATE;
  DELETE FROM target_calls WHERE call_id = p_call_id;
  IF p_answer = 'success' THEN
    UPDATE target_pressure
       SET probing = false, paused_until = NULL, next_probe_at = NULL, failing_since = NULL,
           failures = 0, last_success_at = t, updated_at = t
     WHERE target = p_target;
  ELSIF p_answer = 'pause' THEN
    UPDATE target_pressure
       SET probing = true, paused_until = greatest(paused_until, t + make_interval(secs => p_pause_ms / 1000.0)),
           next_probe_at = NULL, last_error = p_error, updated_at = t
     WHERE target = p_target;
  ELSE
    UPDATE target_pressure
       SET probing = true, failing_since = coalesce(failing_since, t), failures = failures + 1,
           next_probe_at = t + make_interval(secs => least(p_probe_max_ms, 250 * power(2, least(failures, 20))) / 1000.0),
           open_after_ms = p_open_after_ms, last_error = p_error, updated_at = t
     WHERE target = p_target;
  END IF;
END $$;
