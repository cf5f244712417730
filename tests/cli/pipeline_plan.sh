#!/usr/bin/env bash
# End-to-end: `flexwatt pipeline plan` on the Perseus artifact's GPT-3 175B A100-SXM profile
# (12 micro-batches: the schedule saves at least 90 % of Perseus's published 15.20 % within the
# 1.2 % time budget; the fields --json promises), --help, and bad input (file:line:field,
# exit 2); `pipeline validate`: --help and bad input (a missing data folder, a bad cell).
# Usage: bash pipeline_plan.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out

prof="$src/data/perseus/stage_profile_gpt3-175b+a100_sxm_bf16.csv"
check "plan runs" "$bin" pipeline plan "$prof" --microbatches 12 --json >"$out/p.json"
check "top-level fields" jqt 'has("energy_saved") and has("time_increase") and has("mode")' \
  "$out/p.json"
check "within the time budget" jqt '.time_increase <= 0.012 and .time_increase >= 0' "$out/p.json"
check ">= 90 % of Perseus's 15.20 %" jqt '.energy_saved >= 0.9 * 0.1520' "$out/p.json"
check "8 stages, 128 pipelines" jqt '.stages == 8 and .pipelines == 128' "$out/p.json"
check "per-stage schedule" jqt '.schedule.stages | length == 8' "$out/p.json"
check "frontier: time rising, energy falling (Pareto)" \
  jqt '.schedule.frontier | (length > 2) and
       ([range(1; length) as $i | .[$i].time_s > .[$i - 1].time_s and
                                  .[$i].energy_j < .[$i - 1].energy_j] | all)' "$out/p.json"
check "straggler runs" "$bin" pipeline plan "$prof" --microbatches 96 --straggler-factor 1.2 \
  --json >"$out/s.json"
check "straggler saves more" jqt '.energy_saved > 0.2' "$out/s.json"
check "text output" bash -c "'$bin' pipeline plan '$prof' | grep -q 'stage 7:'"
check "--help" bash -c "'$bin' pipeline plan --help | grep -q -- --straggler-factor"

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
check "validate --help" bash -c "'$bin' pipeline validate --help | grep -q -- --gpu-model"
expect_exit2 "validate: missing data" "$out/nodata/A100_zeus_global.csv" pipeline validate \
  --data "$out/nodata"
mkdir -p "$out/zeus"
printf 'model_name,partition_method,dp,tp,pp,num_microbatches,power_limit_0,time,energy\nm,uniform_transformer,1,1,1,4,300,1.0,x\n' \
  >"$out/zeus/A100_zeus_global.csv"
cp "$out/zeus/A100_zeus_global.csv" "$out/zeus/A100_zeus_local.csv"
expect_exit2 "validate: bad cell" "A100_zeus_global.csv:2: energy: not a number" pipeline validate \
  --data "$out/zeus"
finish pipeline_plan
