#!/usr/bin/env bash
# shellcheck disable=SC2016  # the $names in single quotes are jq's, not the shell's
# shellcheck disable=SC2154  # $out is set by scratch_dir (lib/common.sh)
# End-to-end: `flexwatt pipeline plan` on the Perseus artifact's GPT-3 175B A100-SXM profile:
# by default caps stay within the A100-SXM4-80GB's 100-400 W range (the profile's 1410 MHz
# draws up to 482 W: the baseline is the GPU at its 400 W maximum, said in the output) and
# schedule segments last at least the cap settling time; --allow-above-max plans from the
# profile's top clock (Perseus's set-up: with --min-segment-s 0 the schedule saves at least
# 85 % of Perseus's 15.20 % at equal time); the frontier holds the plan's own points; a cap
# limit never raises a proven-optimal saving; the fields --json promises, --help, and bad input
# (file:line:field, exit 2); `pipeline validate`: --help and bad input (the Zeus CSVs, the
# stage work table).
# Usage: bash pipeline_plan.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out

prof="$src/data/perseus/stage_profile_gpt3-175b+a100_sxm_bf16.csv"
check "plan runs" "$bin" pipeline plan "$prof" --microbatches 12 --json >"$out/p.json"
check "top-level fields" jqt 'has("energy_saved") and has("time_increase") and has("mode")
  and has("bound_energy_saved") and has("optimal") and has("min_segment_s")' "$out/p.json"
check "within the time budget" jqt '.time_increase <= 0.012 and .time_increase >= 0' "$out/p.json"
check "8 stages, 128 pipelines" jqt '.stages == 8 and .pipelines == 128' "$out/p.json"
check "per-stage schedule" jqt '.schedule.stages | length == 8' "$out/p.json"
check "caps within 100-400 W by default" jqt '.cap_range_w == [100, 400]
  and .allow_above_max == false
  and ([.. | objects | select(has("cap_w")) | .cap_w | select(. != null) | . <= 400] | all)
  and ([.. | objects | select(has("above_max_cap"))] | length == 0)' "$out/p.json"
check "baseline stated: the GPU at its 400 W maximum" jqt '(.baseline.at_profile_top_clock | not)
  and (.baseline.rule | test("400 W maximum"))
  and ([.baseline.stages[] | .forward_mhz < 1410] | all)' "$out/p.json"
check "segments at least the settling time (2.2 s)" jqt '.min_segment_s == 2.2
  and ([.schedule.segments[] | select(length > 1) | .[].busy_s >= 2.2] | all)
  and (.schedule.shortest_segment_s == 0 or .schedule.shortest_segment_s >= 2.2)' "$out/p.json"
check "bound at least the saving" jqt '.bound_energy_saved >= .energy_saved - 1e-12' "$out/p.json"
check "--min-segment-s 0.3: every segment of a switching stage >= 0.3 s" bash -c "
  '$bin' pipeline plan '$prof' --microbatches 12 --min-segment-s 0.3 --json |
  jq -e '([.schedule.segments[] | select(length > 1) | .[].busy_s >= 0.3] | all)
         and (.schedule.shortest_segment_s == 0 or .schedule.shortest_segment_s >= 0.3)' >/dev/null"
check "Perseus's set-up runs" "$bin" pipeline plan "$prof" --microbatches 12 --slowdown-max 0 \
  --allow-above-max --min-segment-s 0 --json >"$out/e.json"
check "... baseline at the profile's 1410 MHz, caps above 400 W flagged" jqt \
  '.baseline.at_profile_top_clock and .allow_above_max
   and ([.. | objects | select(.above_max_cap == true)] | length > 0)' "$out/e.json"
check "... >= 85 % of Perseus's 15.20 % at equal time" jqt \
  '.energy_saved >= 0.85 * 0.1520 and .time_increase <= 1e-12' "$out/e.json"
check "frontier: Pareto, and no worse than the plan at its time" jqt '.schedule as $m
  | $m.frontier | (length >= 2)
    and ([range(1; length) as $i | .[$i].time_s > .[$i - 1].time_s and
                                   .[$i].energy_j < .[$i - 1].energy_j] | all)
    and ([.[] | select(.time_s <= $m.pipeline_time_s * (1 + 1e-12)) | .energy_j]
         | min <= $m.pipeline_energy_j * (1 + 1e-12))' "$out/e.json"
check "optimal plan with 0.45 s segments" bash -c "'$bin' pipeline plan '$prof' --microbatches 12 \
  --slowdown-max 0 --min-segment-s 0.45 --json >'$out/f.json' && jq -e .optimal '$out/f.json' >/dev/null"
check "--max-cap-w 390 does not raise it" bash -c "'$bin' pipeline plan '$prof' --microbatches 12 \
  --slowdown-max 0 --min-segment-s 0.45 --max-cap-w 390 --json |
  jq -e --slurpfile f '$out/f.json' '.energy_saved <= \$f[0].energy_saved + 1e-7
    and .cap_limit_w == 390' >/dev/null"
check "straggler runs" "$bin" pipeline plan "$prof" --microbatches 96 --straggler-factor 1.2 \
  --json >"$out/s.json"
check "straggler saves more" jqt '.energy_saved > 0.15' "$out/s.json"
check "text output" bash -c "'$bin' pipeline plan '$prof' >'$out/p.txt' && grep -q 'stage 7:' '$out/p.txt' &&
  grep -q 'baseline: no cap written' '$out/p.txt' && grep -q 'no such plan saves more than' '$out/p.txt'"
check "--help" bash -c "'$bin' pipeline plan --help | grep -q -- --straggler-factor"
check "--help: the new flags" bash -c "'$bin' pipeline plan --help | grep -q -- --allow-above-max &&
  '$bin' pipeline plan --help | grep -q -- --min-segment-s"

expect_exit2 "no subcommand" "subcommand" pipeline
expect_exit2 "missing file" "nope" pipeline plan "$out/nope.csv"
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,0.05,x\n' >"$out/bad.csv"
expect_exit2 "bad cell" "bad.csv:2: energy: not a number" pipeline plan "$out/bad.csv"
printf 'stage,instruction,frequency,time\n' >"$out/bad2.csv"
expect_exit2 "missing column" "bad2.csv:1: energy: column missing" pipeline plan "$out/bad2.csv"
expect_exit2 "unknown gpu" "--gpu: unknown 'x100'" pipeline plan "$prof" --gpu x100
expect_exit2 "batch not a multiple" "--global-batch" pipeline plan "$prof" --microbatches 7
expect_exit2 "no blocking power" "--blocking-w" pipeline plan "$prof" --gpu h100-sxm5
expect_exit2 "bad slowdown" "slowdown-max" pipeline plan "$prof" --slowdown-max -1
expect_exit2 "bad segment" "min-segment-s" pipeline plan "$prof" --min-segment-s -1
printf 'stage,instruction,frequency,time,energy\n0,forward,1000,1,500\n0,backward,1000,2,1000\n' \
  >"$out/hot.csv"
expect_exit2 "no clock within the range" "stage 0 forward: no profiled clock draws at most" \
  pipeline plan "$out/hot.csv" --microbatches 1 --global-batch 1
check "validate --help" bash -c "'$bin' pipeline validate --help | grep -q -- --gpu-model"
expect_exit2 "validate: missing data" "$out/nodata/A100_zeus_global.csv" pipeline validate \
  --data "$out/nodata"
mkdir -p "$out/zeus"
printf 'model_name,partition_method,dp,tp,pp,num_microbatches,power_limit_0,time,energy\nm,uniform_transformer,1,1,1,4,300,1.0,x\n' \
  >"$out/zeus/A100_zeus_global.csv"
cp "$out/zeus/A100_zeus_global.csv" "$out/zeus/A100_zeus_local.csv"
expect_exit2 "validate: bad cell" "A100_zeus_global.csv:2: energy: not a number" pipeline validate \
  --data "$out/zeus"
check "validate --help names --stage-work" bash -c "'$bin' pipeline validate --help | grep -q -- --stage-work"
printf 'gpu,model,partition,stage,forward_s,backward_s\nA100,gpt3-xl,"custom:0,8,14,21,27",0,0.1,x\n' \
  >"$out/stage_work.csv"
expect_exit2 "validate: bad stage work" "stage_work.csv:2: backward_s: not a number" \
  pipeline validate --data "$src/data/perseus" --stage-work "$out/stage_work.csv"
finish pipeline_plan
