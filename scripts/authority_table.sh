#!/usr/bin/env bash
# docs/operators.md's knob-authority tables from one `flexwatt authority SCENARIO --json` run
# (simulated, seed 1, 5 settings per knob, the scenario's duration), written to stdout: per knob
# its swept range, the mean-power, 30 s peak-window and 0.5 s peak-sample swings, the
# throughput ratio and whether it has authority. With BAND (e.g. 0.15-0.25) a last column
# says whether gen_concurrency's mean swing lies in that band (the target for the
# rollout-only 72B sweep). Part of `make results` (scripts/results.sh splices each table).
#   scripts/authority_table.sh JSON [BAND]
# Exit 2 on bad arguments or a JSON without knobs, 1 when the JSON is missing.
set -euo pipefail
[ $# = 1 ] || [ $# = 2 ] || { echo "usage: scripts/authority_table.sh JSON [LOW-HIGH]" >&2; exit 2; }
json=$1 band=${2:-}
[ -f "$json" ] || { echo "authority_table.sh: $json: no such file" >&2; exit 1; }
lo='' hi=''
if [ -n "$band" ]; then
  [[ $band =~ ^(0?\.[0-9]+)-(0?\.[0-9]+)$ ]] || { echo "authority_table.sh: BAND '$band' is not LOW-HIGH (fractions)" >&2; exit 2; }
  lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
fi
jq -e '.knobs | length > 0' "$json" >/dev/null 2>&1 || { echo "authority_table.sh: $json: no knobs" >&2; exit 2; }
jq -r --arg lo "$lo" --arg hi "$hi" '
  def p(x): "\(x * 1000 | round / 10) %";
  (if $lo == "" then "" else " gen_concurrency in \(($lo | tonumber) * 100 | round)–\(($hi | tonumber) * 100 | round) % |" end) as $bh
  | "| knob (`\(.scenario)`, \(.job_gpus) GPU\(if .job_gpus > 1 then "s" else "" end), seed \(.seed), \(.duration_s) s) | mean swing | 30 s peak swing | 0.5 s peak swing | throughput ratio | authority |\($bh)",
    "|---|---|---|---|---|---|\(if $lo == "" then "" else "---|" end)",
    (.knobs[] | "| \(.knob) (\([.settings[].value] | min | round)..\([.settings[].value] | max | round)) | \(p(.mean_power_swing)) | \(p(.peak_window_swing)) | \(p(.peak_sample_swing)) | \(.throughput_ratio * 100 | round / 100)× | \(if .has_authority then "yes" else "no" end) |\(
        if $lo == "" then "" elif .knob != "gen_concurrency" then " – |"
        elif .mean_power_swing >= ($lo | tonumber) and .mean_power_swing <= ($hi | tonumber) then " met |"
        else " **missed** |" end)")' "$json"
