#!/bin/bash
# The part of the official postgres image's entrypoint docker-compose.yml relies on: on an empty
# $PGDATA, `initdb` with superuser POSTGRES_USER (default postgres) and password POSTGRES_PASSWORD
# (required unless POSTGRES_HOST_AUTH_METHOD=trust), scram-sha-256 for every host connection, the
# database POSTGRES_DB (default: POSTGRES_USER) created, /docker-entrypoint-initdb.d/*.sh and *.sql
# run; then the server listening on every interface, as PID 1 (after stepping down from root).
set -Eeuo pipefail

if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi

if [ "$1" = 'postgres' ] && [ "$(id -u)" = '0' ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 00700 "$PGDATA"
  exec gosu postgres "$BASH_SOURCE" "$@"
fi

if [ "$1" = 'postgres' ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_USER:=postgres}"
  : "${POSTGRES_DB:=$POSTGRES_USER}"
  : "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
    echo 'Error: POSTGRES_PASSWORD is not set (or set POSTGRES_HOST_AUTH_METHOD=trust)' >&2
    exit 1
  fi
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "${POSTGRES_PASSWORD:-}") \
    --auth-local=trust --auth-host="$POSTGRES_HOST_AUTH_METHOD" ${POSTGRES_INITDB_ARGS:-}
  printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >> "$PGDATA/pg_hba.conf"
  # The official image's defaults (its sample configuration): every interface, and the socket where
  # Debian's clients (pg_isready, psql) look for it.
  printf "\nlisten_addresses = '*'\nunix_socket_directories = '/var/run/postgresql'\n" >> "$PGDATA/postgresql.conf"
  # A server on the Unix socket only while the database is set up, as the official entrypoint.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
  export PGUSER="$POSTGRES_USER" PGHOST=/var/run/postgresql
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "running $f"; . "$f" ;;
      *.sql) echo "running $f"; psql -v ON_ERROR_STOP=1 --dbname "$POSTGRES_DB" -f "$f" ;;
      *) ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  unset PGUSER PGHOST
  echo 'PostgreSQL init process complete; ready for start up.'
fi

if [ "$1" = 'postgres' ]; then
  shift
  exec postgres "$@"
fi
exec "$@"
