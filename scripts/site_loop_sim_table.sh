#!/usr/bin/env bash
# site_loop_sim_table.sh TEST_BIN OUT.md: docs/fleet.md's offline-harness table (the site loop
# in virtual time without etcd, tests/fleet_sim/site_loop_sim_test.cpp), seeds 1-4: over-cut
# per tick / on 1-minute means for the open loop, the integral alone and curves + integral,
# from the test's `[site-loop-sim]` lines (simulated; ~2.5 s a seed). Exit 2 on bad usage, 1
# when the test fails or prints no line.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/site_loop_sim_table.sh TEST_BIN OUT.md (TEST_BIN: build/tests/test_fleet_sim)" >&2; exit 2; }
bin=$1 out=$2
[ -x "$bin" ] || { echo "site_loop_sim_table: $bin: not an executable" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seeds="1 2 3 4"
for s in $seeds; do
  FW_SITE_LOOP_SEED=$s "$bin" --gtest_filter='SiteLoopSim.*' >"$work/$s.log" 2>&1 || {
    echo "site_loop_sim_table: seed $s: the test failed (tail of its output:)" >&2
    tail -5 "$work/$s.log" >&2
    exit 1
  }
  [ "$(grep -c '^\[site-loop-sim\]' "$work/$s.log")" -eq 3 ] || {
    echo "site_loop_sim_table: seed $s: expected 3 [site-loop-sim] lines" >&2
    exit 1
  }
done
# shellcheck disable=SC2086  # one argument per seed
python3 - "$work" "$out" $seeds <<'PY'
import json, re, sys
work, out, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]
line = re.compile(r"^\[site-loop-sim\] simulated, \d+ nodes, loop (\d), curves (\d): (\{.*\}) performance ([\d.]+) hold")
arms = {(0, 0): "open loop", (1, 0): "integral only (no curves)", (1, 1): "curves + integral (default)"}
cells, perf = {}, {}
for s in seeds:
    for l in open(f"{work}/{s}.log"):
        m = line.match(l)
        if not m:
            continue
        key = (int(m.group(1)), int(m.group(2)))
        d = json.loads(m.group(3))
        cells.setdefault(key, []).append(f"{d['mean_overcut_frac']*100:.2f} / {d['mean_overcut_1min_frac']*100:.2f} %")
        perf.setdefault(key, []).append(float(m.group(4)))
with open(out, "w") as f:
    f.write("| arm | " + " | ".join(f"seed {s}" for s in seeds) + " | weighted performance |\n")
    f.write("|---|" + "---|" * len(seeds) + "---|\n")
    for key, name in arms.items():
        p = perf[key]
        f.write(f"| {name} | " + " | ".join(cells[key]) + f" | {min(p):.3f}–{max(p):.3f} |\n")
PY
