#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq programs in single quotes
# End-to-end: `flexwatt stabilize` (issue #48): --help with an example, a short study on the
# shipped 1,024-GPU scenario (table within 120 columns, JSON fields, the reference arm), the site
# trace read back by `analyze --stability` with the same ramp, a controller arm, the
# feed-forward stabilize arm, and bad input exiting 2 with the file, line and field.
# Usage: bash stabilize.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2 out=""
source "$(dirname "$0")/lib/common.sh"
command -v jq > /dev/null || need_tool jq
scratch_dir out
sc="$src/scenarios/stability/site-1024-h100.yaml"
# 60 s, job 5-45 s, small grids: a few seconds on one core.
short=(--set duration_s=60 --set job.end_s=45 --set job.start_s=5 --set job.checkpoint_every_iters=10
       --set job.checkpoint_s=4 --set 'limits.steady_s=[33, 43]' --set site.representatives=8
       --set 'search={cap_frac: [0.7], fill_frac: [0.6], stagger_s: [8],
         smoothing: {floor_frac: [0.8], ramp_up_w_per_s: [25], ramp_down_w_per_s: [40], hysteresis_ms: [500]},
         combined: {cap_frac: [1.0], fill_frac: [0, 0.7], stagger_s: [0, 8]}}'
       --eval-seeds 2 --calib-seeds 1 --quiet)

check "help exits 0" "$bin" stabilize --help > "$out/help.txt"
check "help has an example" grep -q "Example" "$out/help.txt"
check "help names --trace" grep -q -- "--trace" "$out/help.txt"
check "listed among the verbs" grep -q "stabilize" <("$bin" --help)

# Table.
check "table run" "$bin" stabilize "$sc" "${short[@]}" --trace "$out/none.csv" > "$out/table.txt"
check "table fits 120 columns" awk 'length($0) > 120 { exit 1 }' "$out/table.txt"
for arm in none caps smoothing fill stagger combined stabilize; do
  check "table has arm $arm" grep -qE "^$arm " "$out/table.txt"
done
check "table says simulated" grep -q "simulated" "$out/table.txt"
check "table names the limits" grep -q "limits: ramp <= 10 %" "$out/table.txt"
check "table names the trace" grep -q "trace: $out/none.csv" "$out/table.txt"
check "table gives the speed" grep -q "^speed: " "$out/table.txt"

# JSON.
"$bin" stabilize "$sc" "${short[@]}" --arms none,smoothing --json > "$out/s.json"
check "json arms" jqt '[.arms[].name] == ["none", "smoothing"]' "$out/s.json"
check "json reference" jqt '.arms[0].energy_overhead_pct == 0 and .arms[0].throughput_loss_pct == 0' "$out/s.json"
check "json none violates" jqt '.arms[0].meets == false and .arms[0].ramp_limit_pct_per_s > 10' "$out/s.json"
check "json smoothing meets" jqt '.arms[1].meets == true and .arms[1].mitigations.smoothing.floor_frac == 0.8' "$out/s.json"
check "json seeds" jqt '.eval_seeds == [1, 2] and .calib_seeds == [1000000] and .simulated' "$out/s.json"
check "json site" jqt '.site.gpus == 1024 and .site.output_period_s <= 0.1' "$out/s.json"
check "json ramps per window" jqt '[.arms[0].ramps[].window_s] == [0.1, 1, 10]' "$out/s.json"

# The trace: a time_s,power_w CSV that analyze --stability reads, with the study's 1 s ramp
# (the unmitigated arm: its own peak is the reference peak).
check "trace header" grep -qx "time_s,power_w" <(head -1 "$out/none.csv")
check "trace length" test "$(wc -l < "$out/none.csv")" -eq 1201
"$bin" stabilize "$sc" "${short[@]}" --arms none --json > "$out/none.json"
"$bin" analyze --stability "$out/none.csv" --ramp-windows 1 --json > "$out/an.json"
study=$(jq '.arms[0].runs[0].ramps[1].pct_of_peak_per_s' "$out/none.json")
ana=$(jq '.ramps[0] | ([.max_up_pct_of_peak_per_s, .max_down_pct_of_peak_per_s] | max)' "$out/an.json")
check "analyze reads the trace with the study's ramp ($study vs $ana)" \
  awk -v a="$study" -v b="$ana" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 0.05 * a) }'
check "analyze: site series" jqt '.series == "site" and .grid.period_s == 0.05' "$out/an.json"

# A controller arm through the registry.
"$bin" stabilize "$sc" "${short[@]}" --arms none --controller uncontrolled --json > "$out/c.json"
check "controller arm" jqt '.arms[1].kind == "controller" and .arms[1].name == "uncontrolled"' "$out/c.json"

# The feed-forward controller arm (its settings chosen on the calibration seed) meets the
# limits at a lower throughput loss than the smoothing arm (this 60 s run is all events: its
# projected costs mean little); its trace is written from the chosen setting.
"$bin" stabilize "$sc" "${short[@]}" --arms none,smoothing,stabilize --json \
  --set 'search.stabilize=["stabilize:floor_pct=70,ramp_w_per_s=40", "stabilize:floor_pct=20,ramp_w_per_s=40"]' \
  --trace "$out/stab.csv" --trace-arm stabilize > "$out/stab.json"
check "stabilize arm: a controller with its candidates" \
  jqt '.arms[2].name == "stabilize" and .arms[2].kind == "controller" and .arms[2].candidates == 2' "$out/stab.json"
check "stabilize arm meets the limits, losing less throughput than smoothing" \
  jqt '.arms[2].meets and .arms[2].throughput_loss_pct < .arms[1].throughput_loss_pct' "$out/stab.json"
check "stabilize arm: the setting chosen on the calibration seed" \
  jqt '.arms[2].setting == "stabilize:floor_pct=70,ramp_w_per_s=40" and .arms[2].candidates_meeting == 1' "$out/stab.json"
check "stabilize trace written" test "$(wc -l < "$out/stab.csv")" -eq 1201
printf 'name: x\nsite: {gpus: 64, gpu: h100-sxm5}\n' > "$out/nosmooth.yaml"
expect_exit2 "stabilize needs smoothing" "no power smoothing" stabilize "$out/nosmooth.yaml" --arms none,stabilize

# Bad input: exit 2 with file:line: field, or the flag.
printf 'name: x\nsite: {gpus: 1004}\n' > "$out/bad.yaml"
expect_exit2 "gpus not a multiple of tp" "bad.yaml:2: site.gpus" stabilize "$out/bad.yaml"
printf 'name: x\nsite: {gpus: 64}\nlimits: {max_band_frac: 2}\n' > "$out/bad2.yaml"
expect_exit2 "band fraction out of range" "bad2.yaml:3: limits.max_band_frac" stabilize "$out/bad2.yaml"
printf 'name: x\nsite: {gpus: 64}\nlimitz: {}\n' > "$out/bad3.yaml"
expect_exit2 "unknown key" "bad3.yaml:3.*limitz" stabilize "$out/bad3.yaml"
expect_exit2 "missing file" "nope.yaml" stabilize "$out/nope.yaml"
expect_exit2 "unknown arm" "--arms" stabilize "$sc" --arms none,magic
expect_exit2 "unknown controller" "--controller" stabilize "$sc" --controller magic
expect_exit2 "bad seeds" "--eval-seeds" stabilize "$sc" --eval-seeds 0
expect_exit2 "bad trace arm" "--trace-arm" stabilize "$sc" --arms none --trace "$out/x.csv" --trace-arm caps
expect_exit2 "bad override" "search.cap_frac" stabilize "$sc" --set 'search.cap_frac=[1.5]'

finish stabilize
