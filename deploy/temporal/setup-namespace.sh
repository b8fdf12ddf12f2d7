#!/bin/sh
# Step 4 of docs/deployment.md ("Self-hosted Temporal"): once the frontend serves, creates settle's
# namespace (a real server creates none) and the search attributes settle's workflows set, then waits
# until the namespace is usable. Safe to run again. The temporal CLI reads the connection from the
# same variables as settle: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, and for mTLS
# TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH and
# TEMPORAL_TLS_SERVER_NAME. Also: SETTLE_NAMESPACE_RETENTION (72h), TEMPORAL_CLI (temporal).
# Run by docker-compose.yml's `temporal-namespace` service and by `npm run topology`.
set -eu
: "${TEMPORAL_CLI:=temporal}"
namespace=${TEMPORAL_NAMESPACE:?set TEMPORAL_NAMESPACE}
# Keyword search attributes settle's workflows set (ShipmentId, PaymentId, ...; docs/operations.md).
SEARCH_ATTRIBUTES="ShipmentId PaymentId PaymentEventType SettleOutcome SettleDeliveryState"

# Waits up to $1 seconds for the command after it to succeed; prints its last error otherwise.
retry() {
  limit=$1
  shift
  waited=0
  until "$@" >/dev/null 2>&1; do
    waited=$((waited + 1))
    if [ "$waited" -ge "$limit" ]; then
      echo "setup-namespace: still failing after $limit s: $*" >&2
      "$@" >&2 || true
      return 1
    fi
    sleep 1
  done
}

retry 180 "$TEMPORAL_CLI" operator cluster health
if "$TEMPORAL_CLI" operator namespace describe --namespace "$namespace" >/dev/null 2>&1; then
  echo "setup-namespace: namespace $namespace exists"
else
  "$TEMPORAL_CLI" operator namespace create --namespace "$namespace" \
    --retention "${SETTLE_NAMESPACE_RETENTION:-72h}"
fi
# The frontend learns of a new namespace within seconds (its namespace cache refreshes).
retry 120 "$TEMPORAL_CLI" operator search-attribute list --namespace "$namespace"
existing=$("$TEMPORAL_CLI" operator search-attribute list --namespace "$namespace")
for name in $SEARCH_ATTRIBUTES; do
  if echo "$existing" | grep -qw "$name"; then
    echo "setup-namespace: search attribute $name exists"
  else
    retry 60 "$TEMPORAL_CLI" operator search-attribute create --namespace "$namespace" --name "$name" --type Keyword
    echo "setup-namespace: created search attribute $name (Keyword)"
  fi
done
# Visibility answers for the namespace: settle's workers and gateways can use it.
retry 120 "$TEMPORAL_CLI" workflow list --namespace "$namespace" --limit 1
echo "setup-namespace: namespace $namespace ready"
