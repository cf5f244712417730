#!/usr/bin/env bash
# dr_replay_shape.sh FLEXWATT_BIN DURATION_S MIX:EVENT:DEPTH...: `flexwatt dr replay` on each
# mix's event file reshaped to fleet-sim's dr timeline (src/fleet_sim/fleet_sim.hpp "dr": a run
# of DURATION_S, the target from 0.25 D with its ramp window to 0.35 D, held to 0.85 D, released
# over 0.05 D, at DEPTH), seeds 1-3: the replay's rows beside fleet-sim's on the same event shape
# (docs/fleet.md's seeds table; simulated). The reshaped files are written to a temporary
# directory, the jobs' sweep paths made absolute. One markdown table on stdout. Exit 2 on bad
# usage.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: scripts/dr_replay_shape.sh FLEXWATT_BIN DURATION_S MIX:EVENT:DEPTH..." >&2; exit 2; }
bin=$1 d=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| mix (depth) | seed | minutes above target | mean over-cut (trailing 1-minute means) | weighted performance | every job ≥ tier |"
echo "|---|---|---|---|---|---|"
for spec in "$@"; do
  IFS=: read -r mix event depth <<<"$spec"
  [ -f "$here/$event" ] || { echo "dr_replay_shape: $event: no such file" >&2; exit 2; }
  python3 - "$here/$event" "$d" "$depth" "$work/$mix.yaml" <<'PY'
import os, re, sys
src, d, depth, out = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
t = open(src).read()
base = os.path.dirname(os.path.abspath(src))
t = re.sub(r"sweep_csv: ([^,}\s]+)", lambda m: "sweep_csv: " + os.path.normpath(os.path.join(base, m.group(1))), t)
t = re.sub(r"^duration_s: .*$", f"duration_s: {d:g}", t, flags=re.M)
t = t[:t.index("\nevent:")] + f"""
event:
  steps:
    - {{start_s: {0.25 * d:g}, ramp_s: {0.1 * d:g}, depth: {depth}}}
  end_s: {0.85 * d:g}
  release_ramp_s: {0.05 * d:g}
"""
open(out, "w").write(t)
PY
  for s in 1 2 3; do
    "$bin" dr replay "$work/$mix.yaml" --seed "$s" --json >"$work/r.json" 2>"$work/r.err" || {
      rc=$?
      [ "$rc" = 1 ] || { echo "dr_replay_shape: $mix seed $s: $(tail -1 "$work/r.err")" >&2; exit 1; }
    }
    jq -r --arg mix "$mix ($depth)" --arg s "$s" '
      def p(x): "\(x * 10000 | round / 100) %";
      "| \($mix) | \($s) | \(.minutes_above_target * 100 | round / 100) | \(p(.mean_overcut_frac)) | \(.weighted_performance * 1000 | round / 1000) | \(if .all_jobs_at_tier then "yes" else "no" end) |"' \
      "$work/r.json"
  done
done
