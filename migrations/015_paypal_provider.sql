-- PayPal, the third provider (docs/providers.md): its unmatched events are provider exceptions, and
-- its webhook-events API is a second recovery source with its own cursor.
ALTER TABLE provider_exceptions DROP CONSTRAINT provider_exceptions_provider_check;
ALTER TABLE provider_exceptions ADD CONSTRAINT provider_exceptions_provider_check
  CHECK (provider IN ('stripe', 'adyen', 'paypal'));
ALTER TABLE recovery_cursors DROP CONSTRAINT recovery_cursors_provider_check;
ALTER TABLE recovery_cursors ADD CONSTRAINT recovery_cursors_provider_check
  CHECK (provider IN ('stripe', 'adyen', 'paypal'));
