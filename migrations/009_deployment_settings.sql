-- One value per deployment for settings every surface must agree on, whoever reads them and from
-- where: the delivery stuck threshold (`delivery_stuck_after_ms`) is written by each gateway at start
-- from its SETTLE_DELIVERY_STUCK_AFTER (the last gateway started wins, and logs a warning when it
-- replaces another value) and read by every list of exceptions: `settle exceptions`, `settle stats`
-- and the settle_open_exceptions gauge. A CLI's own environment does not count once a gateway ran.
CREATE TABLE deployment_settings (
  key         text PRIMARY KEY,
  value       bigint NOT NULL,
  written_by  text NOT NULL,
  written_at  timestamptz NOT NULL DEFAULT now()
);
