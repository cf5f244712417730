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
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$root"; }
trap cleanup EXIT
# start_cluster BASE: three members on ports BASE..BASE+5; 1 if one does not come up.
start_cluster() {
  local base=$1 initial="" i c p up
  endpoints=""
  for i in 0 1 2; do
    initial+="${initial:+,}m$i=http://127.0.0.1:$((base + 2*i + 1))"
    endpoints+="${endpoints:+,}http://127.0.0.1:$((base + 2*i))"
  done
  for i in 0 1 2; do
    c=http://127.0.0.1:$((base + 2*i)) p=http://127.0.0.1:$((base + 2*i + 1))
    rm -rf "$root/m$i"
    "$etcd" --name m$i --data-dir "$root/m$i" --listen-client-urls $c --advertise-client-urls $c \
      --listen-peer-urls $p --initial-advertise-peer-urls $p --initial-cluster "$initial" \
      --initial-cluster-state new --initial-cluster-token "$root-$base" --log-level warn \
      --logger zap --unsafe-no-fsync >"$root/m$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1 2; do
    up=0
    for _ in $(seq 300); do
      curl -sf --max-time 2 "http://127.0.0.1:$((base + 2*i))/health" | grep -q true && { up=1; break; }
      kill -0 "${pids[${#pids[@]} - 3 + i]}" 2>/dev/null || break  # exited (a port taken?)
      sleep 0.1
    done
    if [ $up = 0 ]; then
      echo "fleet_sim.sh: etcd member m$i on port $((base + 2*i)) did not come up:" >&2
      tail -2 "$root/m$i.log" >&2
      return 1
    fi
  done
}
# Ports on loopback below the ephemeral range (32768-60999 by default: no outgoing connection
# holds one), a slot of 12 from the PID and RANDOM (runs started together, as results.sh starts
# three, get different slots even where their RANDOM sequences agree); another start on a taken
# port tries new ones (five tries).
for try in 1 2 3 4 5; do
  start_cluster $(( 20000 + (($$ * 97 + try * 389 + RANDOM) % 1000) * 12 )) && break
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  pids=()
  [ $try = 5 ] && exit 1
done
"$bin" fleet-sim --etcd "$endpoints" "$@"
