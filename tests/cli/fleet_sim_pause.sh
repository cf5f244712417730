#!/usr/bin/env bash
# End-to-end (simulated, a real etcd x 3 on loopback, ~2.5 min wall): a deep cut through the
# coordinator (fleet-sim, APS job mix on 12 nodes, -43 %: the tiers' floors do not fit) pauses
# a pausable job and resumes it, staggered (>= the 10 s stagger between changes), every job
# within its tier over the run, each job paused at most (1 - tier) of the event's span, and no
# minute above the target. Needs etcd (scripts/fleet_sim.sh).
# Usage: bash fleet_sim_pause.sh FLEXWATT_BIN SOURCE_DIR
source "$(dirname "$0")/lib/fleet_sim.sh"
fleet_sim_run --scenario dr --nodes 12 --duration-s 120 --dr-depth 0.43 --mix aps \
  --allocator curves --site-loop --seed 4
python3 - "$T/run/report.json" <<'PY' || fail "pause timeline ($(cat "$T/log"))"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["dr"]
ev = d["pause_events"]
print("pause events:", ev)
assert any(e["paused"] for e in ev), "no job paused"
paused_jobs = {e["job"] for e in ev if e["paused"]}
assert any(e["job"] in paused_jobs and not e["paused"] for e in ev), "no paused job resumed"
times = [e["t_s"] for e in ev]
assert all(b - a >= 10 - 0.5 for a, b in zip(times, times[1:])), f"not staggered: {times}"
span = 0.6 * r["duration_s"]
# No pause once the event has ended (its release ramp still binds the line: a 240 s run paused
# pt_mpt_7b_fast again there before the coordinator stopped pausing past the event's end).
late = [e for e in ev if e["paused"] and e["t_s"] >= 0.85 * r["duration_s"]]
assert not late, f"paused after the event: {late}"
for j in d["per_job"]:
    assert j["performance"] >= j["tier_min"], j
    assert j["paused_s"] <= (1 - j["tier_min"]) * span + 10, j
assert d["minutes_above_target"] == 0, d["minutes_above_target"]
print("late ticks:", r["late_ticks"])
PY
echo ok
