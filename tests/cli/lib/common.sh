# Shared helpers of the end-to-end CLI tests (tests/cli/*.sh). Sourcing it sets the failure
# count `fails` to 0. Each test ends with `finish NAME`.

fails=0

# scratch_dir VAR: a fresh temporary directory in $VAR, removed when the test exits.
scratch_dir() {
  local d
  d=$(mktemp -d)
  trap "rm -rf '$d'" EXIT
  printf -v "$1" '%s' "$d"
}

# check NAME COMMAND...: the command must succeed.
check() {
  local name=$1; shift
  if ! "$@"; then echo "FAIL: $name"; fails=$((fails + 1)); fi
}

# jqt FILTER FILE: the jq filter must give true.
jqt() { jq -e "$@" > /dev/null; }

# need_tool WHAT: the test cannot run without WHAT (python3, Chromium, ...). Under CI=true that
# is a failure (exit 1: CI installs every tool, `make deps`, so a skip would hide a broken
# setup); elsewhere the test skips (exit 0, with a message).
need_tool() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $1 not installed: under CI=true a missing tool is a failure, not a skip"
    exit 1
  fi
  echo "skip: $1 not installed (make deps installs it)"
  exit 0
}

# explain_process NAME PID LOG...: after a failed check, say whether the background process PID
# still runs (and its exit status when it does not) and print the last lines of each LOG, so a
# failure in CI names its cause. Prints nothing when no check has failed yet.
explain_process() {
  local name=$1 pid=$2 rc; shift 2
  [ "$fails" -eq 0 ] && return 0
  if kill -0 "$pid" 2>/dev/null; then echo "  $name (pid $pid) is running"
  else wait "$pid" 2>/dev/null; rc=$?; echo "  $name (pid $pid) has exited: status $rc"; fi
  for log in "$@"; do [ -s "$log" ] && { echo "  --- last lines of $log"; tail -n 15 "$log"; }; done
  return 0
}

# finish NAME: exit 1 when any check failed.
finish() {
  if [ "$fails" -ne 0 ]; then echo "$1: $fails check(s) failed"; exit 1; fi
  echo "$1: all checks passed"
}

# expect_exit2 NAME PATTERN VERB ARGS...: `flexwatt VERB ARGS...` (the binary in $bin) must
# exit with code 2 and print a message matching the extended regex PATTERN on stderr.
expect_exit2() {
  local name=$1 pattern=$2; shift 2
  local err rc
  err=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL: $name: exit $rc, want 2"; fails=$((fails + 1)); return; fi
  if ! grep -qE -- "$pattern" <<<"$err"; then
    echo "FAIL: $name: message '$err' lacks /$pattern/"; fails=$((fails + 1))
  fi
}

# start_etcd DIR [AVOID_PORT]: one etcd member (Debian's etcd-server) on random loopback ports
# below Linux's ephemeral range (32768-60999, where the outgoing connections of tests running
# beside this one take their local ports), its data in DIR/etcd; another try when a port is
# taken (or within 3 of AVOID_PORT). Sets c (its client URL), base (its client port; base + 1
# is its peer port, base + 2 is left for the caller) and etcd_pid; 1 if none came up.
start_etcd() {
  local _try _ up=0
  for _try in 1 2 3; do
    base=$((20000 + RANDOM % 12000))
    if [ -n "${2:-}" ] && [ $base -ge $(($2 - 3)) ] && [ $base -le $(($2 + 3)) ]; then continue; fi
    c=http://127.0.0.1:$base
    etcd --name m0 --data-dir "$1/etcd" --listen-client-urls "$c" --advertise-client-urls "$c" \
      --listen-peer-urls "http://127.0.0.1:$((base + 1))" \
      --initial-advertise-peer-urls "http://127.0.0.1:$((base + 1))" \
      --initial-cluster "m0=http://127.0.0.1:$((base + 1))" --log-level warn --logger zap \
      --unsafe-no-fsync >"$1/etcd.log" 2>&1 &
    etcd_pid=$!
    for _ in $(seq 100); do curl -sf "$c/health" | grep -q true && { up=1; break; }; sleep 0.1; done
    [ $up = 1 ] && return 0
    kill $etcd_pid 2>/dev/null; rm -rf "$1/etcd"
  done
  return 1
}
