-- An operator closing an exception (`settle exceptions resolve`): who, when and why, append-only.
-- An exception is closed by a resolution of its event and kind made after it began; a later
-- exception of the same kind (a new conflicting payload, a delivery abandoned again) is open again.
CREATE TABLE exception_resolutions (
  resolution_id   bigserial PRIMARY KEY,
  event_id        text NOT NULL,
  kind            text NOT NULL,
  resolved_by     text NOT NULL,
  note            text NOT NULL,
  resolved_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX exception_resolutions_by_event ON exception_resolutions (event_id, kind, resolved_at);
