-- The claim store grows all day and loses a day's claims at once when the purge runs. The purge
-- vacuums after its deletes (src/db/purge.ts); these settings are the net under it (a purge whose
-- VACUUM was not permitted, or was cut off): autovacuum starts after 1 % of the rows are dead or
-- newly inserted instead of PostgreSQL's 20 %, which on a 90-day store is 18 days of purges left
-- unreusable while new claims extend the files.
ALTER TABLE claims SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_analyze_scale_factor = 0.01
);
ALTER TABLE events SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_analyze_scale_factor = 0.01
);
