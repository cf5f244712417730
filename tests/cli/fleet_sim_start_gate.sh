#!/usr/bin/env bash
# End-to-end (simulated, a real etcd x 3 on loopback, ~60 s wall): the coordinators' start and
# stop gates (fleet/start_gate.hpp) through fleet-sim. 8 nodes join over the first 1.5 s; each
# node's job announces its start and starts at the slot its assignment carries. At 1000 W/s and
# a node's start of about 3 kW, the 8 starts spread over about 21 s; at least 8 s is asked (a
# loaded machine may start the first late and the last after the run; ungated they follow the
# joins, 1.5 s), and the report's "starts" block says so. At 0.7 of the 50 s run every job ends
# for good, announced 3 s before. The grid event holds the site near its floor then (each node
# draws about 0.8 kW, of which its stop removes about 0.6 kW): the stop gate at 1000 W/s spreads
# the 8 stops over about 5 s, at least 3 s is asked (ungated they fall in one tick, 0 s), and
# the "stops" block says so. Needs etcd (scripts/fleet_sim.sh).
# Usage: bash fleet_sim_start_gate.sh FLEXWATT_BIN SOURCE_DIR
source "$(dirname "$0")/lib/fleet_sim.sh"
fleet_sim_run --scenario dr --nodes 8 --duration-s 50 --start-ramp-w-per-s 1000 \
  --job-end-fraction 0.7 --stop-ramp-w-per-s 1000 --seed 2 --quiet
python3 - "$T/run/report.json" <<'PY' || fail "starts and stops ($(tail -3 "$T/log"))"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["starts"]
print("starts:", s)
assert s["start_ramp_w_per_s"] == 1000, s
assert s["first_start_s"] >= 0 and s["last_start_s"] - s["first_start_s"] >= 8, s
e = r["stops"]
print("stops:", e)
assert e["stop_ramp_w_per_s"] == 1000 and e["job_end_s"] == 35, e
assert e["jobs_stopped"] == 8, e
assert e["first_stop_s"] >= 35 - 0.5, e  # none before its announced end
assert e["last_stop_s"] - e["first_stop_s"] >= 3, e
PY
echo ok
