#!/usr/bin/env bash
# Under CI=true a test whose tool is missing (python3, Chromium, etcd, Prometheus) must FAIL,
# not skip: CI installs every tool (`make deps`), so a skip there hides a broken setup. Off CI
# the same test skips (exit 0, with a message). The tools are hidden by running each test with
# a PATH of only a few core utilities (no python3, no chromium, no promtool, no prometheus) and
# FLEXWATT_ETCD pointing at a file that does not exist.
# Usage: ci_missing_tool.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib/common.sh"
scratch_dir tmp
mkdir "$tmp/bin"
for t in mktemp dirname rm mkdir cat sleep env timeout; do
  ln -s "$(command -v $t)" "$tmp/bin/$t"
done
tests=$(dirname "$bin")/tests
# expect CI-VALUE WANT-RC NAME COMMAND...: WANT-RC 0 = exit 0, 1 = any non-zero exit.
expect() {
  local ci=$1 want=$2 name=$3; shift 3
  env -i HOME="$tmp" PATH="$tmp/bin" CI="$ci" FLEXWATT_ETCD="$tmp/no-etcd" \
    FLEXWATT_PROMETHEUS="$tmp/no-prometheus" "$@" >"$tmp/out" 2>&1
  local rc=$?
  if { [ "$want" = 0 ] && [ $rc -ne 0 ]; } || { [ "$want" = 1 ] && [ $rc -eq 0 ]; }; then
    echo "FAIL: $name (CI=$ci): exit $rc"; tail -5 "$tmp/out"; fails=$((fails + 1))
  fi
}
for s in agent_sim_grpo agent_vs_eval agent_dashboard grafana_dashboard; do
  expect true 1 "$s" /bin/bash "$src/tests/cli/$s.sh" "$bin" "$src"
  expect "" 0 "$s" /bin/bash "$src/tests/cli/$s.sh" "$bin" "$src"
done
# The C++ tests. Their binaries are built with the project (FLEXWATT_BUILD_TESTS, the same
# build that defines this test), so a missing one is a broken build: a failure, not a skip.
for g in "test_fleet EtcdLive.*:CoordinatorLive*" "test_agent FleetAgent*" \
         "test_agent PythonClient.*" "test_agent Metrics.PromtoolCheckMetricsPasses" \
         "test_agent PrometheusScrape.*"; do
  read -r t filter <<<"$g"
  if [ ! -x "$tests/$t" ]; then
    echo "FAIL: $g: $tests/$t not built (cmake --build build --target $t)"
    fails=$((fails + 1))
    continue
  fi
  expect true 1 "$g" "$tests/$t" --gtest_brief=1 "--gtest_filter=$filter"
  expect "" 0 "$g" "$tests/$t" --gtest_brief=1 "--gtest_filter=$filter"
done
finish ci_missing_tool
