#!/usr/bin/env bash
# End-to-end: `flexwatt fit` on the cases it used to get wrong silently: the GPU class of a log
# without a name column (exit 2 asking for --gpu when the power levels do not decide it), a
# name column that decides it, a level the given GPU cannot reach (exit 2), low phases below
# the GPU's context-idle floor (a warning naming `duty` and the floor), and the fit report.
# Logs: tests/fixtures/fit/ (synthetic, made by make_logs.py).
# Usage: bash fit_cases.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
fx="$src/tests/fixtures/fit"

# An H100-level log (550 W/GPU) without a name column: H100 and H200 have the same power
# envelope, so fit asks for --gpu; it never takes the A100 default.
expect_exit2 "no name column, ambiguous class" "--gpu" fit "$fx/h100_noname.csv" --out "$out/a.yaml"
check "nothing written when refused" test ! -e "$out/a.yaml"
# --gpu a100 on it: the training level is above what an A100 reaches (exit 2, says which).
expect_exit2 "level above the GPU" "550|above" fit "$fx/h100_noname.csv" --gpu a100-sxm4-80gb
# A name column decides the class.
awk -F', ' 'NR == 1 { print $0 ", name"; next } { print $0 ", NVIDIA H100 80GB HBM3" }' \
  "$fx/h100_noname.csv" >"$out/named.csv"
check "name column: fitted" "$bin" fit "$out/named.csv" --out "$out/named.yaml" --json \
  >"$out/named.json"
check "name column: H100 twin" grep -q "model: h100-sxm5" "$out/named.yaml"
check "name column: class and its source in JSON" \
  jqt '.gpu.model == "h100-sxm5" and (.gpu.source | test("name"))' "$out/named.json"
# A name column that contradicts --gpu is refused.
expect_exit2 "name column vs --gpu" "name" fit "$out/named.csv" --gpu a100-sxm4-80gb

# Low phases at 110 W on an H100 (context-idle floor 122 W): fitted, with a warning.
"$bin" fit "$fx/h100_low_pauses.csv" --gpu h100-sxm5 --out "$out/low.yaml" 2>"$out/low.err" \
  >/dev/null
rc=$?
check "below the floor: exit 0" test "$rc" -eq 0
check "below the floor: warning names duty" grep -q 'warning: duty' "$out/low.err"
check "below the floor: warning names the floor" grep -q 'idle floor' "$out/low.err"

# The report: twin vs log with errors and a verdict, the same in --json.
check "report" "$bin" fit "$out/named.csv" --check --json --out "$out/r.yaml" >"$out/r.json"
check "report rows" jqt '.report.rows | length >= 10' "$out/r.json"
check "report verdicts" \
  jqt '[.report.rows[] | .verdict | IN("good", "usable", "not reliable")] | all' "$out/r.json"
check "report overall verdict with a reason" \
  jqt '(.report.verdict | IN("good", "usable", "not reliable")) and (.report.reason | length > 0)' \
  "$out/r.json"
check "report table" bash -c "'$bin' fit '$out/named.csv' --check | grep -q 'verdict'"
# A log without training (idle at 72 W on an H100, context idle 122 W): exit 2.
awk -F', ' 'NR == 1 { print; next } { printf "%s, 72.%d W, 0 %%, 500 MiB\n", $1, NR % 7 }' \
  "$fx/h100_low_pauses.csv" >"$out/idle.csv"
expect_exit2 "no training" "no training in the log" fit "$out/idle.csv" --gpu h100-sxm5
# A memory-utilisation column gives the job's own mix.mem (else the preset's, said in a note).
awk -F', ' 'NR == 1 { print $0 ", utilization.memory [%]"; next } { print $0 ", 40 %" }' \
  "$out/named.csv" >"$out/util.csv"
check "utilisation: fitted" "$bin" fit "$out/util.csv" --out "$out/util.yaml" --json >"$out/util.json"
check "utilisation: mix.mem from the log" grep -q "mem: 0.4000, compute_bound" "$out/util.yaml"
check "utilisation: said in a note" \
  jqt '[.notes[] | test("mix.mem 0.400 from the log")] | any' "$out/util.json"
check "no utilisation: the preset's mix.mem, said" \
  jqt '[.notes[] | test("from preset dense-pt: mix.mem")] | any' "$out/named.json"

# A log the twin cannot follow (a 60 s sawtooth from 250 to 550 W: no two levels): its report's
# verdict is "not reliable", and fit says so on stderr too (with --json as well), exit 0.
awk 'BEGIN { print "timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]"
  for (s = 0; s < 300; s++) printf "2026/03/01 12:%02d:%02d.000, %.2f W, 100 %%, 61000 MiB\n",
    int(s / 60), s % 60, 250 + 300 * (s % 60) / 60 + (s * 7) % 5 - 2 }' >"$out/saw.csv"
"$bin" fit "$out/saw.csv" --gpu h100-sxm5 --check --out "$out/saw.yaml" >"$out/saw.txt" \
  2>"$out/saw.err"
rc=$?
check "not reliable: exit 0" test "$rc" -eq 0
check "not reliable: the report says so" grep -q "^verdict: not reliable" "$out/saw.txt"
check "not reliable: a warning on stderr naming the figures" \
  grep -qE "^fit: warning: the twin is not reliable \(outside the usable tolerance: .+\)" \
  "$out/saw.err"
"$bin" fit "$out/saw.csv" --gpu h100-sxm5 --check --json >"$out/saw.json" 2>"$out/saw-json.err"
check "not reliable, --json: exit 0" test $? -eq 0
check "not reliable, --json: the JSON's verdict" jqt '.report.verdict == "not reliable"' "$out/saw.json"
check "not reliable, --json: the warning on stderr too" \
  grep -q "^fit: warning: the twin is not reliable" "$out/saw-json.err"
"$bin" fit "$out/named.csv" --check --out "$out/r2.yaml" >"$out/good.txt" 2>"$out/good.err"
check "a fit that is not 'not reliable' gives no such warning ($(grep '^verdict' "$out/good.txt"))" \
  bash -c "! grep -q '^verdict: not reliable' '$out/good.txt' && ! grep -q 'not reliable' '$out/good.err'"

# The YAML header's figures read sensibly: the named log trains at 550 W with 160 W pauses
# every 40 s of training, 15 s long, over 300 s (make_logs.py); without pauses it says so
# rather than quote zeros; the budget it states is the one written.
h=$(grep '^#' "$out/named.yaml" | tr '\n' ' ')
num() { grep -oE "$1" <<<"$h" | head -1 | grep -oE '[0-9]+(\.[0-9]+)?' | head -1; }
train=$(num 'training [0-9.]+ W'); pauses=$(num '[0-9.]+ regular pauses')
pause_w=$(num 'pauses at [0-9.]+ W'); every=$(num 'median [0-9.]+ s'); len=$(num '[0-9.]+ s long')
check "header: training $train W near 550" jqt -n "${train:-0} > 520 and ${train:-0} < 580"
check "header: $pauses regular pauses, a whole number 4..6" \
  bash -c "[[ '$pauses' =~ ^[0-9]+\$ ]] && [ '$pauses' -ge 4 ] && [ '$pauses' -le 6 ]"
check "header: pauses at $pause_w W near 160" jqt -n "${pause_w:-0} > 140 and ${pause_w:-0} < 180"
check "header: $every s of training between pauses near 40" jqt -n "${every:-0} > 32 and ${every:-0} < 48"
check "header: pauses $len s long near 15" jqt -n "${len:-0} > 11 and ${len:-0} < 19"
budget=$(grep -oE '^budget: \{watts: [0-9]+' "$out/named.yaml" | grep -oE '[0-9]+$')
check "header: the budget it states ($budget W) is the one written" \
  grep -qE "^# Budget: .*\($budget W\)" "$out/named.yaml"
check "no pauses: said, not '0 regular pauses at 0.0 W'" \
  bash -c "grep -q 'training [0-9.]* W, no regular pauses' '$out/saw.yaml' && ! grep -q ' 0 regular pauses' '$out/saw.yaml'"
finish fit_cases
