#!/bin/sh
# Step 2 of docs/deployment.md ("Self-hosted Temporal"): creates Temporal's two PostgreSQL databases
# (persistence and visibility) and brings their schemas to the server release's version with
# temporal-sql-tool. Safe to run again: an existing database only gets the missing schema versions
# (how an upgrade of the server applies its schema changes, before the new server starts).
# Run by docker-compose.yml's `temporal-schema` service (temporalio/admin-tools) and by
# `npm run topology` (tools/topology/run.ts), with the same variables as deploy/temporal/temporal-server.yaml:
#   POSTGRES_SEEDS, DB_PORT (5432), POSTGRES_USER, POSTGRES_PWD, DBNAME (temporal),
#   VISIBILITY_DBNAME (temporal_visibility), TEMPORAL_SCHEMA_DIR (/etc/temporal/schema),
#   TEMPORAL_SQL_TOOL (temporal-sql-tool).
set -eu
: "${TEMPORAL_SQL_TOOL:=temporal-sql-tool}"
: "${TEMPORAL_SCHEMA_DIR:=/etc/temporal/schema}"

sql() {
  "$TEMPORAL_SQL_TOOL" --plugin postgres12 --endpoint "${POSTGRES_SEEDS:?set POSTGRES_SEEDS}" \
    --port "${DB_PORT:-5432}" --user "${POSTGRES_USER:?set POSTGRES_USER}" --password "${POSTGRES_PWD:-}" "$@"
}

for pair in "${DBNAME:-temporal}:temporal" "${VISIBILITY_DBNAME:-temporal_visibility}:visibility"; do
  database=${pair%%:*}
  schema=${pair#*:}
  if output=$(sql --database "$database" create-database --defaultdb postgres 2>&1); then
    echo "setup-schema: created database $database"
    sql --database "$database" setup-schema --version 0.0
  elif echo "$output" | grep -q 'already exists'; then
    echo "setup-schema: database $database exists; applying missing schema versions"
  else
    echo "$output" >&2
    exit 1
  fi
  sql --database "$database" update-schema --schema-dir "$TEMPORAL_SCHEMA_DIR/postgresql/v12/$schema/versioned"
done
echo "setup-schema: done"
