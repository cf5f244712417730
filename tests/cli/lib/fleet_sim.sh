# shellcheck shell=bash
# Set-up of the fleet-sim end-to-end tests (Usage of each: bash TEST FLEXWATT_BIN SOURCE_DIR;
# they need etcd, through scripts/fleet_sim.sh): BIN, SRC, a temporary directory T (removed on
# exit), fail MESSAGE (exit 1), and fleet_sim_run ARGS...: scripts/fleet_sim.sh with ARGS, run
# from the source tree (fleet-sim names its scenarios relative to it; ctest runs in build/), its
# output in $T/run and its log in $T/log; the test fails when it exits non-zero.
set -u
BIN="$1"; SRC="$2"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
fleet_sim_run() {
  cd "$SRC" || fail "cannot enter $SRC"
  FLEXWATT="$BIN" bash "$SRC/scripts/fleet_sim.sh" "$@" --out "$T/run" >"$T/log" 2>&1 ||
    fail "fleet-sim (exit $?): $(grep -v Killed "$T/log" | tail -8)"
}
