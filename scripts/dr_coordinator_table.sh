#!/usr/bin/env bash
# dr_coordinator_table.sh BIN OUT_MD: docs/fleet.md's table of the coordinator's site loop on the
# replay's field-calibrated plant (`flexwatt dr replay`: the planning step the coordinator runs,
# fleet/site_round.hpp, on simulated nodes; issue 45's targets) on the shipped events, nodes of 4
# GPUs and two composed mixes. Simulated; seeds 1-3; ~2 minutes.
# Exit 2 on bad usage, 1 when a replay fails.
# shellcheck disable=SC2016  # jq programs in single quotes
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/dr_coordinator_table.sh BIN OUT_MD" >&2; exit 2; }
bin=$1 out=$2
[ -x "$bin" ] || { echo "dr_coordinator_table: $bin: not an executable" >&2; exit 2; }
command -v jq >/dev/null || { echo "dr_coordinator_table: jq is missing" >&2; exit 1; }
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seeds="1 2 3"
rows=(
  "APS mix (2025-05-01), 32 nodes of 8 GPUs|scenarios/dr/aps-2025-05-01.yaml|"
  "APS mix, 64 nodes of 4 GPUs|scenarios/dr/aps-2025-05-01.yaml|--gpus-per-node 4"
  "CAISO re-enactment, 2 steps|scenarios/dr/caiso-reenactment.yaml|"
  "training-heavy mix (composed), 44 nodes|scenarios/dr/mix-training-heavy.yaml|"
  "inference-heavy mix (composed), 32 nodes|scenarios/dr/mix-inference-heavy.yaml|"
)
{
  echo "| event (simulated plant, field noise) | minutes above | mean over-cut | ramp down | weighted performance | every job ≥ tier | targets met |"
  echo "|---|---|---|---|---|---|---|"
} >"$out"
i=0
for row in "${rows[@]}"; do
  IFS='|' read -r label ev extra <<<"$row"
  {
    files=()
    for s in $seeds; do
      f=$work/$i-$s.json
      # shellcheck disable=SC2086
      "$bin" dr replay "$ev" --seed "$s" $extra --quiet --json >"$f" 2>"$f.err" || {
        # exit 1 is a target the site cannot hold: still a result
        [ $? -eq 1 ] && [ -s "$f" ] || { echo "dr_coordinator_table: dr replay $ev --seed $s $extra: $(tail -1 "$f.err")" >&2; exit 1; }
      }
      files+=("$f")
    done
    jq -s -r --arg l "$label" '
      def fmt(x; k): if k == "pc" then "\(x * 10000 | round / 100) %"
        elif k == "s" then "\(x * 10 | round / 10) s" else "\((x * 10000 | round) / 10000)" end;
      def rng(f; k): (map(f) | min) as $a | (map(f) | max) as $b |
        if fmt($a; k) == fmt($b; k) then fmt($a; k) else "\(fmt($a; k))–\(fmt($b; k))" end;
      (map(.minutes_above_target) | max) as $above |
      (map(.mean_overcut_frac) | max) as $oc |
      (map(.ramp_down_s // 1e9) | max) as $ramp |
      (map(.weighted_performance) | min) as $wp |
      (map(.all_jobs_at_tier) | all) as $tier |
      ($above == 0 and $oc <= 0.02 and $ramp <= 300 and $wp >= 0.94 and $tier) as $met |
      "| \($l) | \(rng(.minutes_above_target; "n")) | \(rng(.mean_overcut_frac; "pc")) | \(rng(.ramp_down_s; "s")) | \(rng(.weighted_performance; "n")) | \(if $tier then "yes" else "no" end) | \(if $met then "yes" else "**no**" end) |"' \
      "${files[@]}" >>"$out"
  }
  i=$((i + 1))
done
