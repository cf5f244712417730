#!/usr/bin/env bash
# Tables a new user meets first (issue #47 item 5): within 120 columns by default, every column
# with --wide (the ones left out named under the table), and token counts in k, M or G as the
# README promises (JSON keeps raw numbers): `allocate --per-job`, `allocate --study`, `sweep`,
# `analyze` (with and without --budget-w) and `sim`'s summary.
# Usage: bash table_widths.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
command -v python3 >/dev/null || need_tool python3
cd "$src" || exit 1  # relative paths: the tables' widths do not depend on where the tree is
src=.
# widest FILE: the widest line in display columns (UTF-8 code points).
widest() { python3 -c 'import sys; print(max([len(l) for l in open(sys.argv[1], encoding="utf-8").read().splitlines()] or [0]))' "$1"; }
fits() {  # fits NAME FILE: FILE's widest line is at most 120 columns
  local w
  w=$(widest "$2")
  check "$1: fits 120 columns (widest $w)" test "$w" -le 120
}

# allocate --per-job: one column per method.
demo="$src/scenarios/flex/allocate-demo.yaml"
"$bin" allocate "$demo" --per-job >"$tmp/per-job.txt"
check "allocate --per-job: exit 0" test $? -eq 0
fits "allocate --per-job" "$tmp/per-job.txt"
check "allocate --per-job: a job's row" grep -qE "^moe-ft-h200 +[0-9.]+ " "$tmp/per-job.txt"
check "allocate --per-job: greedy and optimal shown" \
  grep -qE "^job +PFI .*greedy +optimal$" "$tmp/per-job.txt"
"$bin" allocate "$demo" --per-job --wide >"$tmp/per-job-wide.txt"
check "allocate --per-job --wide: exit 0" test $? -eq 0
check "allocate --per-job --wide: every column" \
  grep -qE "^job +PFI +floor_w +equal +proportional +pfi +pfi_scaled +greedy +optimal$" \
  "$tmp/per-job-wide.txt"
check "allocate --per-job --wide: nothing left out" \
  test "$(grep -c 'not shown' "$tmp/per-job-wide.txt")" -eq 0
if ! grep -qE "^job +PFI +floor_w +equal +proportional +pfi +pfi_scaled" "$tmp/per-job.txt"; then
  check "allocate --per-job: the columns left out are named" \
    grep -q '^not shown (--wide shows them): ' "$tmp/per-job.txt"
fi
check "allocate: throughput in k/M/G, no exponent" \
  test "$(grep -cE '[0-9]e[+-][0-9]' "$tmp/per-job.txt")" -eq 0

# allocate --study (a small study: the table's shape is what is checked).
study=(allocate --study --populations 20 --jobs 10 --pool 40)
"$bin" "${study[@]}" >"$tmp/study.txt"
check "allocate --study: exit 0" test $? -eq 0
fits "allocate --study" "$tmp/study.txt"
check "allocate --study: pfi and greedy shown" grep -qE "^cut .*pfi .*greedy" "$tmp/study.txt"
check "allocate --study: a cut row with a gain in tokens/s" \
  grep -qE "^30% .*% ±[0-9.]+ \[[0-9.]+[kMG]?\]" "$tmp/study.txt"
check "allocate --study: the columns left out are named" \
  grep -q '^not shown (--wide shows them): ' "$tmp/study.txt"
"$bin" "${study[@]}" --wide >"$tmp/study-wide.txt"
check "allocate --study --wide: equal and optimal too" \
  grep -qE "^cut +equal .*optimal$" "$tmp/study-wide.txt"

# sweep: tokens/s in k/M/G (it printed 1.957e+05).
"$bin" sweep --scenario "$src/scenarios/caps-pretrain-a100x1.yaml" --caps 200,300 \
  --measure-s 60 --quiet >"$tmp/sweep.txt"
check "sweep: exit 0" test $? -eq 0
fits "sweep" "$tmp/sweep.txt"
check "sweep: throughput in k/M/G" grep -qE "^ +300 +[0-9.]+ +[0-9.]+[kMG] " "$tmp/sweep.txt"
check "sweep: no exponent" test "$(grep -cE '[0-9]e[+-][0-9]' "$tmp/sweep.txt")" -eq 0
"$bin" sweep --scenario "$src/scenarios/caps-pretrain-a100x1.yaml" --caps 200,300 \
  --measure-s 60 --quiet --json >"$tmp/sweep.json"
check "sweep --json: throughput a raw number" \
  jqt '.jobs[0].rows[0].throughput | type == "number" and . > 1000' "$tmp/sweep.json"

# analyze, with a budget and without.
ex="$src/data/examples/trace"
"$bin" analyze "$ex" --budget-w 2400 >"$tmp/analyze.txt"
fits "analyze --budget-w" "$tmp/analyze.txt"
check "analyze: tokens in k/M/G" grep -qE "^tokens [0-9.]+[kMG], " "$tmp/analyze.txt"
"$bin" analyze "$ex" >"$tmp/analyze-propose.txt"
fits "analyze (proposal)" "$tmp/analyze-propose.txt"

# sim's summary: a job's tokens in k/M/G.
"$bin" sim "$src/scenarios/grpo-7b-a100.yaml" --duration-s 120 --out "$tmp/trace" >"$tmp/sim.txt"
check "sim: exit 0" test $? -eq 0
check "sim: tokens in k/M/G" grep -qE "^  job .* tokens [0-9.]+[kMG]  steps [0-9]+$" "$tmp/sim.txt"
finish table_widths
