#!/bin/sh
# First start of docker-compose.yml's PostgreSQL (run by the image's entrypoint from
# /docker-entrypoint-initdb.d, as the superuser, once, on an empty data folder): settle's role and
# Temporal's role, each with its own password and nothing more. settle owns the `settle` database,
# which no other role may connect to; Temporal may create its own two databases (temporal-sql-tool's
# create-database in deploy/temporal/setup-schema.sh) and owns them. Neither is a superuser.
# Sourced by the entrypoint (POSIX sh, no `exit`): SETTLE_DB_PASSWORD, TEMPORAL_DB_PASSWORD.
set -eu
psql -v ON_ERROR_STOP=1 --dbname postgres \
  -v settle_password="${SETTLE_DB_PASSWORD:?set SETTLE_DB_PASSWORD}" \
  -v temporal_password="${TEMPORAL_DB_PASSWORD:?set TEMPORAL_DB_PASSWORD}" <<'SQL'
CREATE ROLE settle LOGIN PASSWORD :'settle_password';
CREATE DATABASE settle OWNER settle;
REVOKE ALL ON DATABASE settle FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE settle TO settle;
CREATE ROLE temporal LOGIN CREATEDB PASSWORD :'temporal_password';
SQL
echo "postgres-roles: roles settle and temporal created"
