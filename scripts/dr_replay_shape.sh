#!/usr/bin/env bash
# dr_replay_shape.sh [--fleet-line] FLEXWATT_BIN DURATION_S MIX:EVENT:DEPTH...: `flexwatt dr
# replay` on each mix's event file reshaped to fleet-sim's dr timeline (src/fleet_sim/
# fleet_sim.hpp "dr": a run of DURATION_S, the target from 0.25 D with its ramp window to
# 0.35 D, held to 0.85 D, released over 0.05 D, at DEPTH), seeds 1-3: the replay's rows beside
# fleet-sim's on the same event shape (docs/fleet.md; simulated). The reshaped files are written
# to a temporary directory, the jobs' sweep paths made absolute. One markdown table on stdout.
# --fleet-line: fleet-sim's own target line instead of the window: the step at 0.30 D with a
# 0.05 D ramp at depth x baseline / 0.05 D W/s down and up (the line fleet-sim's grid target
# draws from the baseline; the baseline the replay's measured one, from a first pass of the
# same seed), and the hold's weighted performance beside the whole run's. Exit 2 on bad usage.
set -euo pipefail
line=window
[ "${1:-}" = --fleet-line ] && { line=fleet; shift; }
[ $# -ge 3 ] || { echo "usage: scripts/dr_replay_shape.sh [--fleet-line] FLEXWATT_BIN DURATION_S MIX:EVENT:DEPTH..." >&2; exit 2; }
bin=$1 d=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$line" = fleet ]; then
  echo "| mix (depth) | seed | minutes above target | mean over-cut (trailing 1-minute means) | weighted performance (whole / hold) | every job ≥ tier |"
else
  echo "| mix (depth) | seed | minutes above target | mean over-cut (trailing 1-minute means) | weighted performance | every job ≥ tier |"
fi
echo "|---|---|---|---|---|---|"
# reshape SRC OUT DEPTH [RATE]: the event file on fleet-sim's timeline (RATE: W/s down and up).
reshape() {
  python3 - "$1" "$d" "$3" "$2" "$line" "${4:-0}" <<'PY'
import os, re, sys
src, d, depth, out, line, rate = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], float(sys.argv[6])
t = open(src).read()
base = os.path.dirname(os.path.abspath(src))
t = re.sub(r"sweep_csv: ([^,}\s]+)", lambda m: "sweep_csv: " + os.path.normpath(os.path.join(base, m.group(1))), t)
t = re.sub(r"^duration_s: .*$", f"duration_s: {d:g}", t, flags=re.M)
start, ramp = (0.30 * d, 0.05 * d) if line == "fleet" else (0.25 * d, 0.1 * d)
limits = f"\n  ramp_down_w_per_s: {rate:.6g}\n  ramp_up_w_per_s: {rate:.6g}" if rate > 0 else ""
t = t[:t.index("\nevent:")] + f"""
event:
  steps:
    - {{start_s: {start:g}, ramp_s: {ramp:g}, depth: {depth}}}
  end_s: {0.85 * d:g}
  release_ramp_s: {0.05 * d:g}{limits}
"""
open(out, "w").write(t)
PY
}
# replay FILE SEED: the replay's JSON in $work/r.json (exit 1: a target it cannot hold, reported).
replay() {
  "$bin" dr replay "$1" --seed "$2" --json >"$work/r.json" 2>"$work/r.err" || {
    rc=$?
    [ "$rc" = 1 ] || { echo "dr_replay_shape: $1 seed $2: $(tail -1 "$work/r.err")" >&2; exit 1; }
  }
}
for spec in "$@"; do
  IFS=: read -r mix event depth <<<"$spec"
  [ -f "$here/$event" ] || { echo "dr_replay_shape: $event: no such file" >&2; exit 2; }
  reshape "$here/$event" "$work/$mix.yaml" "$depth"
  for s in 1 2 3; do
    replay "$work/$mix.yaml" "$s"
    if [ "$line" = fleet ]; then
      rate=$(jq -r --argjson depth "$depth" --argjson d "$d" '.baseline_w * $depth / (0.05 * $d)' "$work/r.json")
      reshape "$here/$event" "$work/$mix-rate.yaml" "$depth" "$rate"
      replay "$work/$mix-rate.yaml" "$s"
    fi
    jq -r --arg mix "$mix ($depth)" --arg s "$s" --arg line "$line" '
      def p(x): "\(x * 10000 | round / 100) %";
      def r3(x): x * 1000 | round / 1000;
      (reduce .per_job[] as $j ({w: 0, h: 0}; .w += $j.tier_min | .h += $j.tier_min * $j.hold_performance)) as $hp |
      "| \($mix) | \($s) | \(.minutes_above_target * 100 | round / 100) | \(p(.mean_overcut_frac)) | \(r3(.weighted_performance))\(if $line == "fleet" then " / \(r3($hp.h / $hp.w))" else "" end) | \(if .all_jobs_at_tier then "yes" else "no" end) |"' \
      "$work/r.json"
  done
done
