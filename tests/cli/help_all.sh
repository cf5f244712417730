#!/usr/bin/env bash
# Every verb answers --help with exit code 0 and an example; an unknown verb exits 2.
# Usage: bash help_all.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
fails=0
verbs=$("$bin" --help | awk '/^verbs:/{on=1; next} on && NF {print $1}')
[ -n "$verbs" ] || { echo "FAIL: no verbs listed"; exit 1; }
for v in $verbs; do
  out=$("$bin" "$v" --help 2>&1); rc=$?
  [ $rc -eq 0 ] || { echo "FAIL: $v --help exit $rc"; fails=$((fails + 1)); }
  grep -qi "example" <<<"$out" || { echo "FAIL: $v --help has no example"; fails=$((fails + 1)); }
done
"$bin" no-such-verb >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || { echo "FAIL: unknown verb exit $rc, want 2"; fails=$((fails + 1)); }
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "help_all: $(wc -w <<<"$verbs") verbs checked"
