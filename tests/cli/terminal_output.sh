#!/usr/bin/env bash
# What a terminal shows: a progress line on stderr for the long verbs (demo, eval, train, caps,
# sweep, dr; fleet-sim needs etcd and is left to the fleet tests) when stderr is a terminal
# (a pseudo-terminal from script(1)), none when it is piped or with --quiet, and stdout the
# same either way; the tables fit 120 columns by default and --wide prints every column;
# tokens/MWh in readable units; the demo's headline names its reference and the published
# figures beside it.
# Usage: terminal_output.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
command -v script >/dev/null || need_tool "script (bsdutils)"
command -v python3 >/dev/null || need_tool python3
cd "$src" || exit 1
# widest FILE: the widest line in display columns (UTF-8 code points).
widest() { python3 -c 'import sys; print(max([len(l) for l in open(sys.argv[1], encoding="utf-8").read().splitlines()] or [0]))' "$1"; }

# on_tty NAME ARGS...: run the verb with stderr on a pseudo-terminal (stdout to NAME.out);
# the terminal's bytes in NAME.tty. piped NAME ARGS...: stderr to NAME.err.
on_tty() {
  local name=$1; shift
  local cmd
  printf -v cmd '%q ' "$bin" "$@"
  TERM=xterm script -qec "$cmd >$tmp/$name.out" /dev/null >"$tmp/$name.tty" </dev/null
}
piped() {
  local name=$1; shift
  "$bin" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
}
# progress_checks NAME VERB_PREFIX ARGS...: a run on a terminal and a piped one, and their
# checks (quiet_checks adds a --quiet run on a terminal: every verb shares the one helper, so
# eval's and demo's stand for the rest).
quiet_checks() {
  local name=$1 prefix=$2; shift 2
  on_tty "$name-quiet" "$@" --quiet
  check "$name: --quiet is a flag (exit 0)" test $? -eq 0
  check "$name: --quiet: no progress line on the terminal" \
    test "$(grep -caF $'\r'"$prefix: " "$tmp/$name-quiet.tty")" -eq 0
}
progress_checks() {
  local name=$1 prefix=$2; shift 2
  on_tty "$name-tty" "$@"
  check "$name: exit 0 on a terminal" test $? -eq 0
  check "$name: a progress line ('$prefix: ') on the terminal" \
    grep -qaF $'\r'"$prefix: " "$tmp/$name-tty.tty"
  piped "$name-pipe" "$@"
  check "$name: exit 0 piped" test $? -eq 0
  check "$name: no progress line when stderr is piped" \
    test "$(grep -caF $'\r' "$tmp/$name-pipe.err")" -eq 0
}

scn=scenarios/grpo-7b-a100.yaml
ctl=uncontrolled,static,static:knob=caps,group_size=16,gen_concurrency=64,pid,lookahead:horizon_s=60
progress_checks eval eval eval "$scn" --controllers "$ctl" --seeds 2 --duration-s 60 --json
quiet_checks eval eval eval "$scn" --controllers "$ctl" --seeds 2 --duration-s 60 --json
check "eval: the same JSON on stdout with and without a terminal" \
  cmp -s "$tmp/eval-tty.out" "$tmp/eval-pipe.out"
check "eval: the line is erased at the end" grep -qaF $'\r\033[K' "$tmp/eval-tty.tty"

progress_checks demo demo demo --seeds 1 --duration-s 60 --out "$tmp/demo" --threads 2
quiet_checks demo demo demo --seeds 1 --duration-s 60 --out "$tmp/demo-q" --threads 2 --json
progress_checks train train train "$scn" --iterations 1 --envs 2 --episode-s 60 --seed 3 \
  --out "$tmp/p.json"
progress_checks caps caps caps scenarios/caps-pipeline-imbalance-a100x8.yaml --seeds 1 --quick \
  --set duration_s=120
progress_checks sweep sweep sweep --scenario scenarios/finetune-moe-h200x8.yaml --measure-s 60
progress_checks dr "dr replay" dr replay scenarios/dr/caiso-reenactment.yaml

# Widths: every table of these verbs within 120 columns by default.
for n in demo-pipe caps-pipe sweep-pipe dr-pipe train-pipe; do
  w=$(widest "$tmp/$n.out")
  check "${n%-pipe}: stdout fits 120 columns (widest $w)" test "$w" -le 120
done
piped eval-table eval "$scn" --controllers "$ctl" --seeds 2 --duration-s 60
w=$(widest "$tmp/eval-table.out")
check "eval: the default table fits 120 columns (widest $w)" test "$w" -le 120
check "eval: the columns left out are named" grep -q '^not shown (--wide shows them): ' "$tmp/eval-table.out"
piped eval-wide eval "$scn" --controllers "$ctl" --seeds 2 --duration-s 60 --wide
check "eval --wide: every column" grep -qE '^controller .*steps/h .*slide win % .*limiter' "$tmp/eval-wide.out"
check "eval --wide: nothing left out" test "$(grep -c 'not shown' "$tmp/eval-wide.out")" -eq 0
check "eval --wide: one line per row (long labels beside their cells)" \
  grep -qE '^static:knob=caps,group_size=16,gen_concurrency=64 +[0-9]+ ±' "$tmp/eval-wide.out"
# tokens/MWh in M or G with the CI in the same unit, in both layouts.
for n in eval-table eval-wide demo-pipe; do
  check "$n: tokens/MWh as M or G (the CI in the same unit)" \
    grep -qE '^uncontrolled .* [0-9.]+([MG])( ±[0-9.]+\1)?( |$)' "$tmp/$n.out"
  check "$n: no 10-digit integers" test "$(grep -cE '[0-9]{10}' "$tmp/$n.out")" -eq 0
done

# The demo's headline: its reference named, ours and the published figure on each line.
check "demo: the headline names its reference" \
  grep -qE '^HEADLINE \(SIMULATED, 1 seed of 60 s\): PPO against the strongest fixed setting on the same actuators' \
  "$tmp/demo-pipe.out"
check "demo: the headline's tokens line: ours and the published, labelled" \
  grep -qE '^  step tokens +[+-][0-9.]+ %   published \+18\.1 % \(paper, vs its static\)$' \
  "$tmp/demo-pipe.out"
ref=$(jq -r '.comparison.simulated.reference' "$tmp/demo/report.json" 2>/dev/null)
check "demo: the headline's reference is PPO's row reference, a fixed setting ($ref)" sh -c "case '$ref' in static*) ;; *) exit 1;; esac"
check "demo: the headline names it ($ref)" \
  grep -qF "  reference: $ref (" "$tmp/demo-pipe.out"
check "demo: stdout opens with the headline" \
  grep -qE '^HEADLINE \(SIMULATED' <<<"$(head -1 "$tmp/demo-pipe.out")"
check "demo: no decision timings without --verbose" \
  test "$(grep -c 'decision_us' "$tmp/demo-pipe.out")" -eq 0
check "demo: every output file listed, report.html first" \
  grep -qE "^wrote: $tmp/demo/report.html .*report.json, .*summary.csv, .*power.svg, .*traces/" \
  <<<"$(sed -n '/^wrote: /,$p' "$tmp/demo-pipe.out" | tr '\n' ' ' | tr -s ' ')"
check "demo: no two table rows with the same figures (merged, named once)" \
  test "$(awk '/^controller /{on=1; next} on && /^not shown/{exit} on' "$tmp/demo-pipe.out" |
    sed -E 's/^[^ ]+ +//' | grep -E '^[0-9]' | sort | uniq -d | wc -l)" -eq 0
piped demo-verbose demo --seeds 1 --duration-s 60 --out "$tmp/demo-v" --threads 2 --verbose
check "demo --verbose: the decision timings" grep -q '^  decision_us ' "$tmp/demo-verbose.out"
check "demo: the published figures' source said" \
  grep -qE '^  published = arXiv 2608\.11226 .*against the paper.s own static baseline' "$tmp/demo-pipe.out"
finish terminal_output
