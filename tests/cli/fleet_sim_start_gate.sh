#!/usr/bin/env bash
# End-to-end (simulated, a real etcd x 3 on loopback, ~50 s wall): the coordinators' start gate
# (fleet/start_gate.hpp) through fleet-sim. 8 nodes join over the first 1.5 s; each node's job
# announces its start and starts at the slot its assignment carries. At 1000 W/s and a node's
# start of about 3 kW, the 8 starts spread over about 21 s; at least 8 s is asked (a loaded
# machine may start the first late and the last after the 40 s run; ungated they follow the joins,
# 1.5 s), and the report's "starts" block says so. Needs etcd (scripts/fleet_sim.sh).
# Usage: bash fleet_sim_start_gate.sh FLEXWATT_BIN SOURCE_DIR
source "$(dirname "$0")/lib/fleet_sim.sh"
fleet_sim_run --scenario dr --nodes 8 --duration-s 40 --start-ramp-w-per-s 1000 --seed 2 --quiet
python3 - "$T/run/report.json" <<'PY' || fail "starts ($(tail -3 "$T/log"))"
import json, sys
s = json.load(open(sys.argv[1]))["starts"]
print("starts:", s)
assert s["start_ramp_w_per_s"] == 1000, s
assert s["first_start_s"] >= 0 and s["last_start_s"] - s["first_start_s"] >= 8, s
PY
echo ok
