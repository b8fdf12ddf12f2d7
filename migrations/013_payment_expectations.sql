-- What a shipment expects to be paid (docs/providers.md, "What a payment must match").
--
-- A shipment may name the amount (minor units) and currency it expects: a payment that captures
-- another amount or currency is not applied; its claim is `needs_review` with the reason in
-- `claims.review_reason`, and nothing is released. Unset (the default): any amount is taken, as
-- before. `review_reason` is also set when the payment's provider account is not allowed.
ALTER TABLE shipments
  ADD COLUMN expected_amount bigint CHECK (expected_amount >= 0),
  ADD COLUMN expected_currency char(3) CHECK (expected_currency ~ '^[A-Z]{3}$');
ALTER TABLE claims ADD COLUMN review_reason text;
