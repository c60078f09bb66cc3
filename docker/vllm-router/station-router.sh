#!/bin/bash
# The router behind station's gate (gate.conf): nginx on the API port, vllm-router on the container's loopback
# (its arguments are this script's). Either one ending ends the container, for its restart policy to restart.
set -euo pipefail

if [[ ! ${STATION_API_KEY:-} =~ ^[A-Za-z0-9]+$ ]]; then
    echo "station-router: STATION_API_KEY must be set to the host's API key (letters and digits)" >&2
    exit 2
fi
install -d -m 0700 /run/station-gate
printf 'map $http_authorization $station_key_ok {\n    "Bearer %s" 1;\n    default 0;\n}\n' "$STATION_API_KEY" \
    > /run/station-gate/key.conf
chmod 0600 /run/station-gate/key.conf
unset STATION_API_KEY

nginx -c /etc/station-gate/nginx.conf -g 'daemon off;' &
gate=$!
vllm-router "$@" &
router=$!
trap 'kill -TERM "$gate" "$router" 2>/dev/null || true' TERM INT

status=0
wait -n "$gate" "$router" || status=$?
kill -TERM "$gate" "$router" 2>/dev/null || true
wait || true
exit "$status"
