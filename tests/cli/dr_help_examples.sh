#!/usr/bin/env bash
# Every example in `flexwatt dr --help` and `flexwatt dr replay --help` runs on a fresh checkout
# (issue 45 item 6): each is run, bounded in time, from a scratch folder that sees only the
# project's scenarios/ and data/ (so a path outside the project, e.g. ../shared/..., fails).
# Usage: bash dr_help_examples.sh FLEXWATT_BIN SOURCE_DIR
# shellcheck disable=SC2154  # $out is set by scratch_dir (lib/common.sh)
set -u
bin=$1 src=$2
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac  # the examples run from elsewhere
# shellcheck source=lib/common.sh
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
ln -s "$src/scenarios" "$out/scenarios"
ln -s "$src/data" "$out/data"

# The example command lines of a help text: lines starting with "flexwatt ", continuation
# lines (ending in "\") joined, trailing "# ..." comments dropped.
examples() {
  awk '
    cont { line = line " " $0; sub(/^ +/, "", $0) }
    !cont && /^ +flexwatt / { line = $0 }
    (cont || /^ +flexwatt /) {
      if (line ~ /\\$/) { sub(/\\$/, "", line); cont = 1; next }
      cont = 0; sub(/ +#.*$/, "", line); gsub(/ +/, " ", line); sub(/^ /, "", line); print line
      line = ""
    }'
}

{
  "$bin" dr --help | examples
  "$bin" dr replay --help | examples
} | sort -u >"$out/examples.txt"
n=$(wc -l <"$out/examples.txt")
[ "$n" -ge 3 ] || { echo "FAIL: found $n examples in dr --help, want >= 3"; fails=$((fails + 1)); }
while read -r -a words; do
  [ "${words[0]}" = flexwatt ] || { echo "FAIL: not a flexwatt example: ${words[*]}"; continue; }
  if ! (cd "$out" && timeout 120 "$bin" "${words[@]:1}" >"$out/stdout" 2>"$out/stderr"); then
    echo "FAIL: example '${words[*]}' (from a fresh checkout):"; tail -n 3 "$out/stderr"
    fails=$((fails + 1))
  fi
done <"$out/examples.txt"
finish dr_help_examples
