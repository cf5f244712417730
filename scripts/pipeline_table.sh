#!/usr/bin/env bash
# `flexwatt pipeline plan` on the Perseus artifact's emulated 8-stage x TP 8 pipelines (global
# batch 1536, 1F1B) beside Perseus's published savings (its evaluation notebook): GPT-3 175B
# (data/perseus/) and, held out for validation (never used to design or tune the planner),
# Bloom 176B (data/perseus/validation/). Prints a markdown table; computed from the profiles.
# Usage: scripts/pipeline_table.sh [FLEXWATT_BIN [SLOWDOWN_MAX]]   (default 0.012)
set -eu
cd "$(dirname "$0")/.."
bin=${1:-build/flexwatt}
slow=${2:-0.012}
echo "| profile | micro-batches | straggler | Perseus | constant (time) | schedule (time) | schedule / Perseus | planning CPU s |"
echo "|---|---|---|---|---|---|---|---|"
row() {  # PROFILE GPU MB STRAGGLER PERSEUS_PERCENT
  local j
  j=$("$bin" pipeline plan "$1" --gpu "$2" --microbatches "$3" --straggler-factor "$4" \
      --slowdown-max "$slow" --json)
  jq -r --arg p "$(basename "$1" .csv)" --arg per "$5" '
    "| \($p | sub("stage_profile_"; "") | sub("_bf16"; "")) | \(.microbatches) | \(.straggler_factor) | −\($per) % | " +
    "\(-100 * .constant.energy_saved | . * 100 | round / 100) % (+\(100 * .constant.time_increase | . * 100 | round / 100) %) | " +
    "\(-100 * .schedule.energy_saved | . * 100 | round / 100) % (+\(100 * .schedule.time_increase | . * 100 | round / 100) %) | " +
    "\(10000 * .schedule.energy_saved / ($per | tonumber) | round) % | \(.planning_cpu_s * 1000 | round / 1000) |"' <<<"$j"
}
g=data/perseus/stage_profile_gpt3-175b
b=data/perseus/validation/stage_profile_bloom
for spec in "$g+a100_sxm_bf16.csv a100-sxm4-80gb 15.20 14.19 13.62 13.32 27.0" \
            "$g+a40_bf16.csv a40 11.81 10.22 9.34 8.88 23.6" \
            "$b+a100_sxm_bf16.csv a100-sxm4-80gb 10.47 7.06 5.23 4.28 29.88" \
            "$b+a40_bf16.csv a40 6.97 4.49 3.12 2.41 21.09"; do
  set -- $spec
  prof=$1 gpu=$2; shift 2
  i=0
  for mb in 12 24 48 96; do i=$((i + 1)); row "$prof" "$gpu" "$mb" 1 "${!i}"; done
  row "$prof" "$gpu" 96 1.2 "$5"
done
