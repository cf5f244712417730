#!/usr/bin/env bash
# `flexwatt eval --help`'s first example is the one a new user runs first (issue #47 item 5): it
# must show flexwatt at its best, as the README's headline does. Run as printed (with --json):
# it succeeds, and its learned controller (ppo) makes more step tokens and tokens/MWh than the
# reference row it names, at no more offset-mean violations than it (0 here). It used to
# showcase a PID controller at -35 % tokens and 10 % violations. About a second.
# Usage: bash eval_help_example.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
# shellcheck source=lib/common.sh
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
cd "$src" || exit 1
"$bin" eval --help >"$tmp/help.txt"
example=$(awk '/^Example/ { on = 1; next } on && /^  flexwatt eval / { print; exit }' "$tmp/help.txt")
check "a first example ($example)" test -n "$example"
read -r -a args <<<"${example#  flexwatt eval }"
"$bin" eval "${args[@]}" --json --quiet >"$tmp/first.json" 2>"$tmp/first.err"
check "the first example runs ($(tail -1 "$tmp/first.err"))" test $? -eq 0
check "it names a reference row" jqt '[.controllers[] | select(.vs_reference.completed_step_tokens == 1)] | length >= 1' "$tmp/first.json"
check "it has a learned controller (ppo)" jqt '[.controllers[] | select(.name | startswith("ppo:"))] | length == 1' "$tmp/first.json"
# shellcheck disable=SC2016  # $r is jq's
check "ppo: more step tokens and tokens/MWh than the reference, at no more violations" jqt '
  ([.controllers[] | select(.vs_reference.completed_step_tokens == 1)][0].violation_rate_offsets.rate.mean) as $r
  | .controllers[] | select(.name | startswith("ppo:"))
  | .vs_reference.completed_step_tokens > 1 and .vs_reference.tokens_per_mwh > 1
    and .violation_rate_offsets.rate.mean <= $r' "$tmp/first.json"
finish eval_help_example
