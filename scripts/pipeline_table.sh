#!/usr/bin/env bash
# `flexwatt pipeline plan` on the Perseus artifact's emulated 8-stage x TP 8 pipelines (global
# batch 1536, 1F1B) beside Perseus: GPT-3 175B (data/perseus/) and, held out for validation
# (never used to design or tune the planner), Bloom 176B (data/perseus/validation/). Prints
# markdown; computed from the profiles.
# Usage:
#   scripts/pipeline_table.sh [FLEXWATT_BIN [SLOWDOWN_MAX]]   (default 0.012)
#       one table at SLOWDOWN_MAX (constant and schedule modes, planning CPU). Its Perseus
#       column is like for like: at 0, Perseus's published saving at the baseline's iteration
#       time (its evaluation notebook, hard-coded below); at 0.012, Perseus's own frontier at
#       +1.2 % (data/perseus/frontier_savings.csv); at any other value none ("n/a").
#   scripts/pipeline_table.sh --perseus [FLEXWATT_BIN]
#       the Perseus comparison: the schedule at SLOWDOWN_MAX 0 against Perseus at equal time and
#       at 0.012 against Perseus's frontier at +1.2 %, side by side, with each plan's shortest
#       schedule segment and largest cap, then generated summary lines (docs/caps.md cites them).
set -eu
cd "$(dirname "$0")/.."
mode=table
case ${1:-} in
  -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --perseus) mode=perseus; shift ;;
esac
bin=${1:-build/flexwatt}
slow=${2:-0.012}
frontier_csv=data/perseus/frontier_savings.csv
g=data/perseus/stage_profile_gpt3-175b
b=data/perseus/validation/stage_profile_bloom
# PROFILE GPU_NAME GPU_MAX_CAP_W (hw/gpu_catalog.cpp) and Perseus's published savings at equal
# time (evaluation notebook): micro-batches 12 24 48 96, then 96 with one pipeline 1.2x slower.
specs=("$g+a100_sxm_bf16.csv a100-sxm4-80gb 400 15.20 14.19 13.62 13.32 27.0"
       "$g+a40_bf16.csv a40 300 11.81 10.22 9.34 8.88 23.6"
       "$b+a100_sxm_bf16.csv a100-sxm4-80gb 400 10.47 7.06 5.23 4.28 29.88"
       "$b+a40_bf16.csv a40 300 6.97 4.49 3.12 2.41 21.09")

# frontier PROFILE MB STRAGGLER COLUMN: Perseus's frontier saving (%) from $frontier_csv
# (COLUMN 7: at +0 %, 8: at +1.2 %).
frontier() {
  local n m gp
  n=$(basename "$1" .csv); n=${n#stage_profile_}; m=${n%%+*}; gp=${n#*+}; gp=${gp%_bf16}
  awk -F, -v m="$m" -v g="$gp" -v mb="$2" -v f="$3" -v c="$4" \
    '!/^#/ && $1 == m && $2 == g && $3 == mb && $4 + 0 == f + 0 { print $c; found = 1 }
     END { if (!found) exit 1 }' "$frontier_csv"
}

# plan PROFILE GPU MB STRAGGLER SLOWDOWN [ARGS...]: `pipeline plan --json`, then one line: schedule
# energy_saved (%), time_increase (%), shortest schedule segment (s: a segment's ops at its planned
# clocks, from the profile's op times; the straggler's and the other pipelines' plans), largest
# cap (W; "-" when every segment is uncapped), the JSON's constant-mode saving, time, CPU s, and
# the shortest and longest fill or drain segment (s).
plan() {
  "$bin" pipeline plan "$1" --gpu "$2" --microbatches "$3" --straggler-factor "$4" \
    --slowdown-max "$5" "${@:6}" --json |
    jq -r --rawfile prof "$1" '
      ($prof | split("\n") | .[1:] | map(select(length > 0) | split(","))
        | map({key: "\(.[0])|\(.[1])|\(.[2] | tonumber)", value: (.[3] | tonumber)})
        | from_entries) as $T
      | .stages as $S | .microbatches as $M
      | def t($s; $k; $f): $T["\($s)|\($k)|\($f)"] // error("no profile time \($s) \($k) \($f)");
        def segs: .[] as $st | $st.stage as $s | ([$S - 1 - $s, $M] | min) as $w
          | (["fill", 1, 0], ["warmup", $w - 1, 0], ["steady", $M - $w, $M - $w],
             ["cooldown", 0, $w - 1], ["drain", 0, 1]) as [$ph, $nf, $nb]
          | $st[$ph] | select(. != null and $nf + $nb > 0)
          | {ph: $ph, cap: .cap_w,
             d: ($nf * t($s; "forward"; .forward_mhz) + $nb * t($s; "backward"; .backward_mhz))};
        [(.schedule.stages, (.schedule.others // empty)) | segs] as $g
      | [100 * .schedule.energy_saved, 100 * .schedule.time_increase,
         ($g | map(.d) | min), ($g | map(.cap | select(. != null)) | max // "-"),
         100 * .constant.energy_saved, 100 * .constant.time_increase, .planning_cpu_s,
         ($g | map(select(.ph == "fill" or .ph == "drain") | .d) | min, max)]
      | @tsv'
}

label() { local n; n=$(basename "$1" .csv); n=${n#stage_profile_}; echo "${n%_bf16}"; }

if [ "$mode" = table ]; then
  zero=$(awk -v s="$slow" 'BEGIN { print (s + 0 == 0) ? 1 : 0 }')
  plus=$(awk -v s="$slow" 'BEGIN { print (s + 0 == 0.012) ? 1 : 0 }')
  if [ "$zero" = 1 ]; then ph="Perseus (equal time, published)"
  elif [ "$plus" = 1 ]; then ph="Perseus (+1.2 %, its frontier)"
  else ph="Perseus (n/a at this slowdown)"; fi
  echo "| profile | micro-batches | straggler | $ph | constant (time) | schedule (time) | schedule / Perseus | planning CPU s |"
  echo "|---|---|---|---|---|---|---|---|"
  for spec in "${specs[@]}"; do
    read -r -a sp <<<"$spec"
    prof=${sp[0]} gpu=${sp[1]}
    i=0
    for case in "12 1" "24 1" "48 1" "96 1" "96 1.2"; do
      read -r mb f <<<"$case"
      if [ "$zero" = 1 ]; then per=${sp[3 + i]}
      elif [ "$plus" = 1 ]; then per=$(frontier "$prof" "$mb" "$f" 8)
      else per=; fi
      plan "$prof" "$gpu" "$mb" "$f" "$slow" |
        awk -F'\t' -v p="$(label "$prof")" -v mb="$mb" -v f="$f" -v per="$per" '
          function z(x) { return (x > -0.005 && x < 0.005) ? 0 : x }
          {
          r = per == "" ? "n/a" : sprintf("%.0f %%", 100 * $1 / per)
          printf "| %s | %s | %s | %s | −%.2f %% (%+.2f %%) | −%.2f %% (%+.2f %%) | %s | %.3f |\n",
            p, mb, f, per == "" ? "n/a" : "−" per " %", z($5), z($6), z($1), z($2), r, $7 }'
      i=$((i + 1))
    done
  done
  exit 0
fi

# --perseus: one row per case, then summary lines computed from the rows.
rows=$(mktemp); trap 'rm -f "$rows"' EXIT
for spec in "${specs[@]}"; do
  read -r -a sp <<<"$spec"
  prof=${sp[0]} gpu=${sp[1]} gmax=${sp[2]}
  i=0
  for case in "12 1" "24 1" "48 1" "96 1" "96 1.2"; do
    read -r mb f <<<"$case"
    per0=${sp[3 + i]}; i=$((i + 1))
    per1=$(frontier "$prof" "$mb" "$f" 8)
    best0=$(frontier "$prof" "$mb" "$f" 7)
    a=$(plan "$prof" "$gpu" "$mb" "$f" 0)
    c=$(plan "$prof" "$gpu" "$mb" "$f" 0.012)
    # Caps limited to the GPU's maximum (--max-cap-w; uncapped still allowed): rerun only where
    # a plan used a cap above it.
    ac=$a cc=$c
    if awk -F'\t' -v m="$gmax" '$4 != "-" && $4 > m { x = 1 } END { exit !x }' <<<"$a"; then
      ac=$(plan "$prof" "$gpu" "$mb" "$f" 0 --max-cap-w "$gmax"); fi
    if awk -F'\t' -v m="$gmax" '$4 != "-" && $4 > m { x = 1 } END { exit !x }' <<<"$c"; then
      cc=$(plan "$prof" "$gpu" "$mb" "$f" 0.012 --max-cap-w "$gmax"); fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(label "$prof")" "$mb" "$f" \
      "$gmax" "$per0" "$per1" "$best0" "$(cut -f1-4 <<<"$a")" "$(cut -f1-4 <<<"$c")" "$gpu" \
      "$(cut -f1 <<<"$ac")" "$(cut -f1 <<<"$cc")" "$(cut -f8-9 <<<"$a")" "$(cut -f8-9 <<<"$c")" >>"$rows"
  done
done
# Fields: 1 label, 2 mb, 3 straggler, 4 GPU max W, 5 Perseus =time, 6 Perseus +1.2 %, 7 Perseus
# frontier =time (best pick), 8-11 schedule at 0 (saved, time, segment, cap), 12-15 at 0.012, 16 gpu,
# 17-18 schedule saved at 0 / 0.012 with caps <= the GPU's maximum, 19-22 shortest and longest
# fill/drain segment at 0, at 0.012.
awk -F'\t' '
function pct(x) { return sprintf("%.0f", x) }
function rng(lo, hi) { return lo == hi ? pct(lo) : pct(lo) "–" pct(hi) }
function add(k, v) { if (!(k in lo) || v < lo[k]) lo[k] = v; if (!(k in hi) || v > hi[k]) hi[k] = v }
function span(k, fmt) { return (k in lo) ? (sprintf(fmt, lo[k]) == sprintf(fmt, hi[k]) ? sprintf(fmt, lo[k]) : sprintf(fmt, lo[k]) "–" sprintf(fmt, hi[k])) : "—" }
BEGIN {
  print "| profile | micro-batches | straggler | Perseus, equal time | schedule, equal time | / Perseus | Perseus +1.2 % (its frontier) | schedule +1.2 % | / Perseus | shortest segment, s (=, +1.2 %) | largest cap, W (=, +1.2 %) / GPU max | / Perseus, caps ≤ GPU max (=, +1.2 %) |"
  print "|---|---|---|---|---|---|---|---|---|---|---|---|"
}
{
  r0 = 100 * $8 / $5; r1 = 100 * $12 / $6; c0 = 100 * $17 / $5; c1 = 100 * $18 / $6
  if ($9 + 0 > -0.005 && $9 + 0 < 0.005) $9 = 0; if ($13 + 0 > -0.005 && $13 + 0 < 0.005) $13 = 0
  printf "| %s | %s | %s | −%s %% | −%.2f %% (%+.2f %%) | %s %% | −%s %% | −%.2f %% (%+.2f %%) | %s %% | %.3f, %.3f | %s, %s / %s | %s, %s %% |\n",
    $1, $2, $3, $5, $8, $9, pct(r0), $6, $12, $13, pct(r1), $10, $14,
    $11 == "-" ? "uncapped" : sprintf("%.0f", $11), $15 == "-" ? "uncapped" : sprintf("%.0f", $15), $4,
    pct(c0), pct(c1)
  split($1, nm, "+"); m = nm[1]; g = nm[2]; st = ($3 + 0 > 1) ? "s" : "n"
  add(m g st "0", r0); add(m g st "1", r1); add(m g st "0c", c0); add(m g st "1c", c1)
  n[m]++; if (r0 >= 90) ok0[m]++; if (r1 >= 90) ok1[m]++
  if (st == "s") { best[m g] = $7; rb[m g] = 100 * $8 / $7 }
  add(g "seg", $10 < $14 ? $10 : $14)
  for (c = 19; c <= 22; c++) add("fd", $c)
  for (c = 11; c <= 15; c += 4) if ($c != "-") { add(g "cap", $c); if ($c > $4) above[g]++ }
  np[g] += 2; gmax[g] = $4
}
END {
  for (m in n) { ok0[m] += 0; ok1[m] += 0 }
  printf "\nAt equal time (Perseus'"'"'s published figures): the schedule reaches %s %% of Perseus on GPT-3 A100 and %s %% on A40 without a straggler, %s / %s %% with the straggler (A100 / A40); held-out Bloom A100 %s %%, A40 %s %%, with the straggler %s / %s %%. Target ≥ 90 %%: met in %d of 10 GPT-3 cases and %d of 10 Bloom cases.\n",
    rng(lo["gpt3-175ba100_sxmn0"], hi["gpt3-175ba100_sxmn0"]), rng(lo["gpt3-175ba40n0"], hi["gpt3-175ba40n0"]),
    pct(lo["gpt3-175ba100_sxms0"]), pct(lo["gpt3-175ba40s0"]),
    rng(lo["blooma100_sxmn0"], hi["blooma100_sxmn0"]), rng(lo["blooma40n0"], hi["blooma40n0"]),
    pct(lo["blooma100_sxms0"]), pct(lo["blooma40s0"]), ok0["gpt3-175b"], ok0["bloom"]
  printf "\nAt +1.2 %% against Perseus'"'"'s own frontier at +1.2 %% (data/perseus/frontier_savings.csv): GPT-3 A100 %s %%, A40 %s %%, with the straggler %s / %s %%; Bloom A100 %s %%, A40 %s %%, with the straggler %s / %s %%. Target ≥ 90 %%: met in %d of 10 GPT-3 cases and %d of 10 Bloom cases.\n",
    rng(lo["gpt3-175ba100_sxmn1"], hi["gpt3-175ba100_sxmn1"]), rng(lo["gpt3-175ba40n1"], hi["gpt3-175ba40n1"]),
    pct(lo["gpt3-175ba100_sxms1"]), pct(lo["gpt3-175ba40s1"]),
    rng(lo["blooma100_sxmn1"], hi["blooma100_sxmn1"]), rng(lo["blooma40n1"], hi["blooma40n1"]),
    pct(lo["blooma100_sxms1"]), pct(lo["blooma40s1"]), ok1["gpt3-175b"], ok1["bloom"]
  printf "\nStraggler rows: the published equal-time figure lets the other pipelines take the least frontier energy and then block; taking the least energy including that blocking (as the +1.2 %% column does) Perseus saves %s / %s %% on GPT-3 (A100 / A40) and %s / %s %% on Bloom at equal time, and the schedule reaches %s / %s %% and %s / %s %% of that.\n",
    best["gpt3-175ba100_sxm"], best["gpt3-175ba40"], best["blooma100_sxm"], best["blooma40"],
    pct(rb["gpt3-175ba100_sxm"]), pct(rb["gpt3-175ba40"]), pct(rb["blooma100_sxm"]), pct(rb["blooma40"])
  printf "\nSegments (a segment'"'"'s ops at their planned clocks, in the profile'"'"'s seconds, which the planner uses; the artifact'"'"'s emulation multiplies them by 10): the fill and drain segments, one forward or one backward op, last %s s; the shortest segment of a plan is %s s on the A100 profiles and %s s on the A40 ones. Largest cap: %s W on the A100 plans (%d of %d plans above the A100-SXM4-80GB'"'"'s %d W maximum), %s W on the A40 plans (%d of %d above %d W).\n",
    span("fd", "%.2f"), span("a100_sxmseg", "%.3f"), span("a40seg", "%.3f"), span("a100_sxmcap", "%.0f"), above["a100_sxm"], np["a100_sxm"], gmax["a100_sxm"],
    span("a40cap", "%.0f"), above["a40"], np["a40"], gmax["a40"]
  printf "\nWith caps limited to the GPU'"'"'s maximum (`--max-cap-w`, uncapped segments still at the profile'"'"'s top clock): GPT-3 A100 %s %% of Perseus at equal time and %s %% at +1.2 %% (with the straggler %s / %s %%); Bloom A100 %s %% and %s %% (%s / %s %%).\n",
    rng(lo["gpt3-175ba100_sxmn0c"], hi["gpt3-175ba100_sxmn0c"]), rng(lo["gpt3-175ba100_sxmn1c"], hi["gpt3-175ba100_sxmn1c"]),
    pct(lo["gpt3-175ba100_sxms0c"]), pct(lo["gpt3-175ba100_sxms1c"]),
    rng(lo["blooma100_sxmn0c"], hi["blooma100_sxmn0c"]), rng(lo["blooma100_sxmn1c"], hi["blooma100_sxmn1c"]),
    pct(lo["blooma100_sxms0c"]), pct(lo["blooma100_sxms1c"])
}' "$rows"
