-- A workflow start whose outcome settle could not learn (the start deadline passed, or the connection
-- broke mid-call) although Temporal may have made it durable. The provider was told 503 and nothing
-- was acknowledged; when its retry is then told `duplicate`, this row says why (`settle inspect`,
-- GET /events/<id>: start_outcome_unknown_at).
CREATE TABLE start_outcome_unknown (
  event_id       text PRIMARY KEY,
  workflow_id    text NOT NULL,
  first_at       timestamptz NOT NULL DEFAULT now(),
  last_at        timestamptz NOT NULL DEFAULT now(),
  occurrences    integer NOT NULL DEFAULT 1
);
