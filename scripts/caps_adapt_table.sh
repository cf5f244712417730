#!/usr/bin/env bash
# docs/caps.md's "Adaptation: a workload change mid-run" table from five `flexwatt caps --json`
# runs (seeds 1-5, every shipped capnet policy), written to stdout: per case the range of
# capnet's margins over the uniform and the per-GPU static frontiers (in points of energy saved
# per token at the arm's own loss) over its policies alpha 0.1-0.5 (0.1-0.3 on 64 GPUs, where
# alpha 0.5 barely caps), and the range of every per-GPU static point's margin over the uniform
# frontier. Part of `make results` (scripts/results.sh runs the two cases not in its caps list).
#   scripts/caps_adapt_table.sh DIR
# DIR holds caps-NAME.json for NAME in: caps-pipeline-imbalance-a100x8, caps-adapt-pipeline-a100x8,
# caps-adapt-balanced-to-0.4-a100x8, caps-pipeline-imbalance-a100x64, caps-adapt-pipeline-a100x64.
# Exit 2 on bad arguments, 1 when a JSON is missing or holds no capnet arm of the range.
set -euo pipefail
[ $# = 1 ] || { echo "usage: scripts/caps_adapt_table.sh DIR" >&2; exit 2; }
dir=$1
[ -d "$dir" ] || { echo "caps_adapt_table.sh: $dir is not a directory" >&2; exit 2; }
command -v jq >/dev/null || { echo "caps_adapt_table.sh: jq not installed" >&2; exit 1; }
err=$(mktemp); trap 'rm -f "$err"' EXIT
echo "| case (command below) | capnet vs uniform frontier | capnet vs per-GPU static frontier | per-GPU static vs uniform |"
echo "|---|---|---|---|"
# name|label|largest alpha in the range|bold the per-GPU margin (a change mid-run)
for c in "caps-pipeline-imbalance-a100x8|8 GPUs, 0.3, no change (\`caps-pipeline-imbalance-a100x8\`)|0.5|" \
         "caps-adapt-pipeline-a100x8|8 GPUs, 0.3 redrawn at 600 s (\`caps-adapt-pipeline-a100x8\`)|0.5|bold" \
         "caps-adapt-balanced-to-0.4-a100x8|8 GPUs, balanced → 0.4 at 600 s|0.5|bold" \
         "caps-pipeline-imbalance-a100x64|64 GPUs, 0.3, no change (\`caps-pipeline-imbalance-a100x64\`)|0.3|" \
         "caps-adapt-pipeline-a100x64|64 GPUs, 0.3 redrawn at 600 s|0.3|bold"; do
  IFS='|' read -r name label amax bold <<<"$c"
  f=$dir/caps-$name.json
  [ -s "$f" ] || { echo "caps_adapt_table.sh: $f missing" >&2; exit 1; }
  jq -e -r --arg l "$label" --argjson amax "$amax" --arg bold "$bold" '
    def pt(x): (x * 1000 | round) as $r | ($r | if . < 0 then -. else . end) as $m
      | (if $r < 0 then "−" else "+" end) + (($m / 10 | floor) | tostring) + "." + (($m % 10) | tostring);
    def range(xs): if (xs | length) == 0 then null else "\(pt(xs | min)) to \(pt(xs | max))" end;
    ([.arms[] | select(.family == "capnet" and ((.name | capture("alpha=(?<a>[0-9.]+)").a | tonumber) as $a
        | $a >= 0.1 and $a <= $amax + 1e-9))]) as $cn
    | ([.arms[] | select(.family == "per-gpu")]) as $pg
    | if ($cn | length) == 0 or ($pg | length) == 0 then error("no capnet arm of alpha 0.1-\($amax) or no per-GPU arm")
      else
        (if $amax < 0.5 then " (α ≤ \($amax))" else "" end) as $q
        | range([$cn[].margin_vs_per_gpu]) as $p
        | "| \($l) | \(range([$cn[].margin_vs_uniform]))\($q) | \(if $bold == "bold" then "**\($p)**" else $p end)\($q) | \(range([$pg[].margin_vs_uniform])) |"
      end' "$f" 2>"$err" ||
    { echo "caps_adapt_table.sh: $f: $(tail -1 "$err")" >&2; exit 1; }
done
