-- Transmissions of providers whose signature does not bind the whole body (PayPal signs a CRC32 of
-- it): each transmission ID is taken once, with the SHA-256 of the body it carried, so a second body
-- under a transmission already seen is refused (docs/providers.md, "What the signature covers").
-- Kept as long as a claim (src/db/purge.ts), far past any signature's replay window.
CREATE TABLE provider_transmissions (
  provider         text NOT NULL,
  transmission_id  text NOT NULL,
  body_sha256      text NOT NULL,
  first_seen_at    timestamptz NOT NULL DEFAULT now(),
  refused_bodies   integer NOT NULL DEFAULT 0,
  CONSTRAINT provider_transmissions_pkey PRIMARY KEY (provider, transmission_id)
);
CREATE INDEX provider_transmissions_first_seen_at ON provider_transmissions (first_seen_at);
