#!/usr/bin/env bash
# Starts a 3-member etcd cluster on loopback (temporary data dirs), runs `flexwatt fleet-sim`
# against it with the given arguments, and stops the members by PID.
#   scripts/fleet_sim.sh --nodes 16 --duration-s 120 --out /tmp/fleet
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${FLEXWATT:-$here/build/flexwatt}
etcd=${FLEXWATT_ETCD:-/usr/bin/etcd}
[ -x "$etcd" ] || { echo "fleet_sim.sh: $etcd not found (apt-get install etcd-server)" >&2; exit 2; }
root=$(mktemp -d /tmp/flexwatt-fleet-XXXXXX)
base=$(( 30000 + RANDOM % 20000 ))
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$root"; }
trap cleanup EXIT
initial="" endpoints=""
for i in 0 1 2; do
  initial+="${initial:+,}m$i=http://127.0.0.1:$((base + 2*i + 1))"
  endpoints+="${endpoints:+,}http://127.0.0.1:$((base + 2*i))"
done
for i in 0 1 2; do
  c=http://127.0.0.1:$((base + 2*i)) p=http://127.0.0.1:$((base + 2*i + 1))
  "$etcd" --name m$i --data-dir "$root/m$i" --listen-client-urls $c --advertise-client-urls $c \
    --listen-peer-urls $p --initial-advertise-peer-urls $p --initial-cluster "$initial" \
    --initial-cluster-state new --initial-cluster-token "$root" --log-level warn \
    --logger zap --unsafe-no-fsync >"$root/m$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do
  up=0
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$((base + 2*i))/health" | grep -q true && { up=1; break; }
    kill -0 "${pids[$i]}" 2>/dev/null || break  # exited (a port taken?)
    sleep 0.1
  done
  if [ $up = 0 ]; then
    echo "fleet_sim.sh: etcd member m$i did not come up; its log:" >&2
    tail -5 "$root/m$i.log" >&2
    exit 1
  fi
done
"$bin" fleet-sim --etcd "$endpoints" "$@"
