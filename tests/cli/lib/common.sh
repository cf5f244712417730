# Shared helpers of the end-to-end CLI tests (tests/cli/*.sh); source it after setting
# `fails=0`. Each test ends with `finish NAME`.

# check NAME COMMAND...: the command must succeed.
check() {
  local name=$1; shift
  if ! "$@"; then echo "FAIL: $name"; fails=$((fails + 1)); fi
}

# jqt FILTER FILE: the jq filter must give true.
jqt() { jq -e "$@" > /dev/null; }

# finish NAME: exit 1 when any check failed.
finish() {
  if [ "$fails" -ne 0 ]; then echo "$1: $fails check(s) failed"; exit 1; fi
  echo "$1: all checks passed"
}
