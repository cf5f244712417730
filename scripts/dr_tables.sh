#!/usr/bin/env bash
# dr_tables.sh BIN DATA_DIR OUT_DIR: docs/flexibility.md's two dr replay tables, from runs of
# `flexwatt dr replay` (simulated; ~0.5 s a replay, ~60 replays):
#   OUT_DIR/dr-targets.md   the issue-28 targets, APS and CAISO replays (seed 1, with the range
#                           over seeds 1-5), the field's measured total scored by the same rules
#   OUT_DIR/dr-variants.md  which parts of the loop matter (APS; --method, --z, --ki,
#                           --plant-error; seeds 1-5 where the plant is perturbed)
# DATA_DIR holds the field data (../shared/data/emerald-phoenix). Exit 2 on bad usage, 1 when a
# replay fails or a data file is missing.
# shellcheck disable=SC2016  # jq programs in single quotes
set -euo pipefail
usage() { echo "usage: scripts/dr_tables.sh BIN DATA_DIR OUT_DIR" >&2; exit 2; }
[ $# -eq 3 ] || usage
bin=$1 data=$2 out=$3
[ -x "$bin" ] || { echo "dr_tables: $bin: not an executable" >&2; exit 2; }
[ -d "$out" ] || { echo "dr_tables: $out: not a directory" >&2; exit 2; }
for f in aps_job_power_w.csv aps_projection_w.csv caiso_reenactment_total_w.csv; do
  [ -f "$data/$f" ] || { echo "dr_tables: $data/$f: missing" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "dr_tables: jq is missing" >&2; exit 1; }
cd "$(dirname "$0")/.."
aps=scenarios/dr/aps-2025-05-01.yaml
caiso=scenarios/dr/caiso-reenactment.yaml
seeds="1 2 3 4 5"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# replay NAME EVENT ARGS...: writes $work/NAME.json (exit 1 with the replay's error).
replay() {
  local name=$1 ev=$2
  shift 2
  "$bin" dr replay "$ev" --quiet --json "$@" >"$work/$name.json" 2>"$work/$name.err" || {
    echo "dr_tables: flexwatt dr replay $ev $*: $(tail -1 "$work/$name.err")" >&2
    exit 1
  }
}
for s in $seeds; do
  replay "aps-$s" $aps --seed "$s" --measured-total "$data/aps_job_power_w.csv" \
    --field-projection "$data/aps_projection_w.csv"
  replay "caiso-$s" $caiso --seed "$s" --measured-total "$data/caiso_reenactment_total_w.csv"
done
replay aps-tol0 $aps --tolerance 0
replay aps-actions $aps --measured-total "$data/aps_job_power_w.csv" --field-actions "$data/aps_job_power_w.csv"

# jq over the five seeds' files of one replay: slurped as an array, seed 1 first.
js() { local p=$1; shift; jq -s -r "$@" "$work/$p-1.json" "$work/$p-2.json" "$work/$p-3.json" "$work/$p-4.json" "$work/$p-5.json"; }
defs='def pc(x): "\(x * 10000 | round / 100) %";
  def r(x; n): (x * n | round) / n;
  def rng(f; fmt): (map(f) | min) as $a | (map(f) | max) as $b |
    if fmt == "pc" then (if pc($a) == pc($b) then pc($a) else "\($a * 10000 | round / 100)–\(pc($b))" end)
    elif fmt == "s" then (if r($a; 10) == r($b; 10) then "\(r($a; 10)) s" else "\(r($a; 10))–\(r($b; 10)) s" end)
    else (if r($a; 10000) == r($b; 10000) then "\(r($a; 10000))" else "\(r($a; 10000))–\(r($b; 10000))" end) end;'
cell() {  # cell PREFIX FIELD FORMAT: "seed-1 value (seeds 1-5: range)"
  js "$1" --arg fmt "$3" "$defs"' .[0] as $one | ($one'"$2"') as $v |
    (if $fmt == "pc" then pc($v) elif $fmt == "s" then "\(r($v; 10)) s" else "\(r($v; 10000))" end) as $first |
    "**\($first)** (seeds 1–5: \(rng('"$2"'; $fmt)))"'
}
worst() { js "$1" "map($2) | $3"; }
tol0=$(jq -r '.minutes_above_target' "$work/aps-tol0.json")
f_aps=$work/aps-1.json f_caiso=$work/caiso-1.json
verdict() { if [ "$1" = true ]; then echo met; else echo "**missed**"; fi; }
{
  echo "| target | APS replay | CAISO replay | field, same rules (APS / CAISO) | verdict (every seed, both replays) |"
  echo "|---|---|---|---|---|"
  ok=$([ "$(worst aps .minutes_above_target max)" = 0 ] && [ "$(worst caiso .minutes_above_target max)" = 0 ] && echo true || echo false)
  echo "| 0 minutes above target (1 % tolerance) | $(cell aps .minutes_above_target n) (with \`--tolerance 0\`: $tol0) | $(cell caiso .minutes_above_target n) | $(jq -r '.measured.minutes_above_target' "$f_aps") / $(jq -r '.measured.minutes_above_target' "$f_caiso") | $(verdict "$ok") |"
  ok=$(jq -s -r 'map(.mean_overcut_frac) | max <= 0.02' "$work"/aps-?.json "$work"/caiso-?.json)
  echo "| mean over-cut ≤ 2 % of baseline | $(cell aps .mean_overcut_frac pc) | $(cell caiso .mean_overcut_frac pc) | $(jq -r '"\(.measured.mean_overcut_frac * 10000 | round / 100) %"' "$f_aps") / $(jq -r '"\(.measured.mean_overcut_frac * 10000 | round / 100) %"' "$f_caiso") | $(verdict "$ok") |"
  ok=$(jq -s -r 'map(.ramp_down_s // 1e9) | max <= 300' "$work"/aps-?.json "$work"/caiso-?.json)
  echo "| ramp to target ≤ 5 min | $(cell aps .ramp_down_s s) | $(cell caiso .ramp_down_s s) | $(jq -r '"\(.measured.ramp_down_s) s"' "$f_aps") / $(jq -r '"\(.measured.ramp_down_s) s"' "$f_caiso") | $(verdict "$ok") |"
  ok=$(jq -s -r 'map(.all_jobs_at_tier) | all' "$work"/aps-?.json "$work"/caiso-?.json)
  low=$(jq -r '[.per_job[] | {name, m: (.performance - .tier_min), performance, tier_min}] | min_by(.m) | "lowest margin: \(.name) \(.performance * 1000 | round / 1000) vs \(.tier_min)"' "$f_aps")
  echo "| every job ≥ its tier | $(jq -s -r 'if map(.all_jobs_at_tier) | all then "yes" else "no" end' "$work"/aps-?.json) ($low) | $(jq -s -r 'if map(.all_jobs_at_tier) | all then "yes" else "no" end' "$work"/caiso-?.json) | — | $(verdict "$ok") |"
  ok=$(jq -s -r 'map(.weighted_performance) | min >= 0.94' "$work"/aps-?.json "$work"/caiso-?.json)
  echo "| weighted performance ≥ 0.94 | $(cell aps .weighted_performance n) | $(cell caiso .weighted_performance n) | field 0.908 (SRP event, calibration.md) | $(verdict "$ok") |"
  aps_ok=$(jq -r '.projected_vs_measured_rmse_frac <= 0.045' "$f_aps")
  caiso_ok=$(jq -r '.projected_vs_measured_rmse_frac <= 0.045' "$f_caiso")
  echo "| projection vs measured total RMSE ≤ 4.5 % of the mean (seed 1) | $(jq -r '"**\(.projected_vs_measured_rmse_frac * 10000 | round / 100) %** (event only \(.vs_measured.event_rmse_frac * 10000 | round / 100) %)"' "$f_aps") | $(jq -r '"**\(.projected_vs_measured_rmse_frac * 10000 | round / 100) %** (event only \(.vs_measured.event_rmse_frac * 10000 | round / 100) %)"' "$f_caiso") | field simulator: $(jq -r '"\(.field_vs_measured.rmse_frac * 10000 | round / 100) % on minute means, \(.field_vs_measured_at_row_time.rmse_frac * 10000 | round / 100) % at each row'"'"'s time"' "$f_aps") | APS $(verdict "$aps_ok"), CAISO $(verdict "$caiso_ok") |"
  pc_ok=$(jq -r '.plant_model_check.projected_vs_measured_rmse_frac <= 0.045' "$work/aps-actions.json")
  echo "| plant-model check: the field's per-job levels as actions, RMSE vs measured total (seed 1) | $(jq -r '.plant_model_check | "**\(.projected_vs_measured_rmse_frac * 10000 | round / 100) %** (event only \(.event_rmse_frac * 10000 | round / 100) %)"' "$work/aps-actions.json") | — (no per-job data) | | APS $(verdict "$pc_ok") as a plant check (the tracking figure above is a different policy's) |"
} >"$out/dr-targets.md"

# Variants (APS): LABEL|ARGS|SEEDS
variant_rows=(
  "optimal (default)||1"
  "greedy|--method greedy|1"
  "pfi_scaled|--method pfi_scaled|1"
  "equal|--method equal|1"
  "proportional|--method proportional|1"
  "pfi|--method pfi|1"
  "no margin (\`--z 0\`)|--z 0|1"
  "z = 1|--z 1|1"
  "z = 4|--z 4|1"
  "curves' caps open loop (\`--z 0 --ki 0\`)|--z 0 --ki 0|1"
  "open loop, curves off ±5 % (\`--plant-error 0.05\`)|--z 0 --ki 0 --plant-error 0.05|$seeds"
  "loop, curves off ±5 %|--plant-error 0.05|$seeds"
  "open loop, curves off ±10 %|--z 0 --ki 0 --plant-error 0.1|$seeds"
  "loop, curves off ±10 %|--plant-error 0.1|$seeds"
  "uncapped|--method uncapped|1"
)
{
  echo "| variant | seeds | minutes above | over-cut | weighted perf. |"
  echo "|---|---|---|---|---|"
  i=0
  for row in "${variant_rows[@]}"; do
    IFS='|' read -r label args vseeds <<<"$row"
    files=()
    for s in $vseeds; do
      i=$((i + 1))
      # shellcheck disable=SC2086
      replay "v$i" $aps --seed "$s" $args
      files+=("$work/v$i.json")
    done
    jq -s -r --arg l "$label" --arg s "$(echo "$vseeds" | tr ' ' ',')" '
      def pc(x): "\(x * 1000 | round / 10) %";
      def span(f; g): (map(f) | min) as $a | (map(f) | max) as $b | ($a | g) as $x | ($b | g) as $y | if $x == $y then $x else "\($x)–\($y)" end;
      "| \($l) | \($s) | \(map(.minutes_above_target * 100 | round / 100 | tostring) | join(", ")) | \(span(.mean_overcut_frac; pc(.))) | \(span(.weighted_performance; (. * 10000 | round / 10000 | tostring))) |"' "${files[@]}"
  done
} >"$out/dr-variants.md"
