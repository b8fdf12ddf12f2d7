-- A delivery whose target URL is not configured on the worker that ran it is parked as
-- `not_configured` (an exception an operator sees), never completed silently as pending.
ALTER TABLE outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_status_check
  CHECK (status IN ('pending', 'delivered', 'failed', 'compensated', 'not_configured'));
