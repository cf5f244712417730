#!/usr/bin/env bash
# dr_fleet_seeds.sh REPORT.json...: docs/fleet.md's seeds table of the deployed path's dr runs
# (fleet-sim --mix MIX --allocator curves --site-loop, 64 agents, simulated), one row per
# fleet-sim report (its mix, depth and seed; the report's directory name for a report without a
# seed) and, per mix, a row of the mean and range over its reports. Exit 2 on bad usage.
# shellcheck disable=SC2016  # jq programs in single quotes
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/dr_fleet_seeds.sh REPORT.json..." >&2; exit 2; }
for f in "$@"; do [ -f "$f" ] || { echo "dr_fleet_seeds: $f: no such file" >&2; exit 2; }; done
command -v jq >/dev/null || { echo "dr_fleet_seeds: jq is missing" >&2; exit 1; }
echo "| mix (depth) | seed | hold | minutes above target | mean over-cut, ticks | mean over-cut, 1-minute means | per-tick sd of the hold (its over-cut at exact 1-minute tracking) | ramp down | weighted performance (whole / hold) | every job ≥ tier (lowest margin) | late ticks |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
# The hold's per-tick swing (sd of the site's power over the hold, from the trace.csv beside
# the report) and the over-cut it leaves on the per-tick rule with the 1-minute means exactly on
# the target (sd x phi(0) = 0.399 sd, a normal swing).
swing() {
  python3 - "$1" <<'PY'
import csv, json, os, statistics, sys
r = json.load(open(sys.argv[1]))
d, D = r["dr"], r["duration_s"]
rows = csv.DictReader(open(os.path.join(os.path.dirname(sys.argv[1]), "trace.csv")))
p = [float(x["site_w"]) for x in rows if 0.35 * D <= float(x["t_s"]) < 0.85 * D]
print(statistics.pstdev(p) / d["baseline_w"])
PY
}
for f in "$@"; do
  jq --arg dir "$(basename "$(dirname "$f")")" --argjson sd "$(swing "$f")" \
    '.seed //= $dir | .dr.tick_sd_frac = $sd' "$f"
done | jq -s -r '
  def p(x): "\(x * 10000 | round / 100) %";
  def r(x; n): (x * n | round) / n;
  def low: [.dr.per_job[] | {name, m: (.performance - .tier_min)}] | min_by(.m) | "\(.name) +\(r(.m; 1000))";
  def span(f; g): (map(f) | add / length) as $m | (map(f) | min) as $a | (map(f) | max) as $b |
    "\($m | g) (\($a | g)–\($b | g))";
  def mix: "\(.dr.mix // "one job") (\(.dr.depth // "?"))";
  def hold: "\(.duration_s * 0.5 / 60 | . * 10 | round / 10) min";
  group_by(.dr.mix) | .[] |
  (.[] | "| \(mix) | \(.seed) | \(hold) | \(r(.dr.minutes_above_target; 100)) | \(p(.dr.mean_overcut_frac)) | \(p(.dr.mean_overcut_1min_frac)) | \(p(.dr.tick_sd_frac)) (\(p(.dr.tick_sd_frac * 0.3989))) | \(r(.dr.ramp_down_s // 0; 10)) s | \(r(.dr.weighted_performance; 1000)) / \(r(.dr.weighted_hold_performance; 1000)) | \(if .dr.all_jobs_at_tier then "yes" else "no" end) (\(low)) | \(.late_ticks) |"),
  "| \(.[0] | mix) | mean (range), \(length) seeds | \(.[0] | hold) | \(span(.dr.minutes_above_target; r(.; 100))) | \(span(.dr.mean_overcut_frac; p(.))) | \(span(.dr.mean_overcut_1min_frac; p(.))) | \(span(.dr.tick_sd_frac; p(.))) | \(span(.dr.ramp_down_s // 0; "\(r(.; 10)) s")) | \(span(.dr.weighted_performance; r(.; 1000))) / \(span(.dr.weighted_hold_performance; r(.; 1000))) | \(if map(.dr.all_jobs_at_tier) | all then "yes" else "no" end) | \(map(.late_ticks) | add) |"
'
