#!/usr/bin/env bash
# The Prometheus rules shipped in deploy/prometheus/: `promtool check rules` accepts them,
# `promtool test rules` passes their unit tests (flexwatt-rules-test.yaml), and every agent
# series they read is one the agent serves: a fake-NVML agent (2 GPUs, GPU 0 at its power cap
# and in thermal slowdown, a registered job) is scraped and each flexwatt_* name in the rules'
# expressions must be in the scrape, with the throttle reasons and the enforced limit under
# dcgm-exporter's names. Under CI=true a missing promtool fails the test.
# Usage: prometheus_rules.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
build=$(dirname "$bin")
fake=$build/tests/telemetry/fake_nvml/libnvidia-ml.so.1
rules=$src/deploy/prometheus/flexwatt-rules.yaml
source "$(dirname "$0")/lib/agent.sh"
if ! command -v promtool >/dev/null; then
  if [ "${CI:-}" = true ]; then echo "FAIL: promtool missing (make deps installs prometheus)"; exit 1; fi
  echo "skip: promtool not installed (Debian package prometheus)"; exit 0
fi
[ -f "$fake" ] || { echo "FAIL: fake NVML library not built at $fake"; exit 1; }
out=$(promtool check rules "$rules" 2>&1)
check "promtool check rules ($(tail -1 <<<"$out"))" grep -q "SUCCESS: .* rules found" <<<"$out"
out=$(cd "$src/deploy/prometheus" && promtool test rules flexwatt-rules-test.yaml 2>&1)
check "promtool test rules: $(tail -3 <<<"$out" | tr '\n' ' ')" grep -q SUCCESS <<<"$out"
grep -q FAILED <<<"$out" && { echo "$out"; fails=$((fails + 1)); }

# The agent's series the rules read.
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
power * 300
limits * min=100 max=400 default=400 enforced=350 limit=350
reasons 0 0x44
reasons 1 0
SCRIPT
cat > "$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: uncontrolled
budget_w: 700
$agent_local
  metrics_dcgm_names: true
YAML
export FAKE_NVML_SCRIPT=$tmp/script.txt FAKE_NVML_STATE=$tmp/state.txt
"$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent.out" 2>"$tmp/agent.err" &
track_agent $!
check "agent answers /healthz" wait_healthz
curl -s --max-time 3 -X POST "http://127.0.0.1:$port/v1/jobs" -d '{"id": "grpo-1"}' >/dev/null
sleep 0.5
curl -s --max-time 3 "http://127.0.0.1:$port/metrics" >"$tmp/metrics.txt"
names=$(python3 -c '
import re, sys, yaml
rules = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"]]
print("\n".join(sorted({n for r in rules for n in re.findall(r"(?<![:\w])flexwatt_[a-z_]+(?![:\w])", r["expr"])})))
' "$rules")
check "the rules read agent series ($(wc -w <<<"$names"))" test "$(wc -w <<<"$names")" -ge 8
for n in $names; do
  check "agent serves $n" grep -qE "^$n\{" "$tmp/metrics.txt"
done
g0='gpu="0",UUID="[^"]*",modelName="[^"]*"'
check "DCGM_FI_DEV_ENFORCED_POWER_LIMIT 350 W on GPU 0" \
  grep -qE "^DCGM_FI_DEV_ENFORCED_POWER_LIMIT\{$g0,hostname=\"[^\"]+\"\} 350$" "$tmp/metrics.txt"
check "DCGM_FI_DEV_CLOCKS_EVENT_REASONS 0x44 on GPU 0" \
  grep -qE "^DCGM_FI_DEV_CLOCKS_EVENT_REASONS\{$g0,hostname=\"[^\"]+\"\} 68$" "$tmp/metrics.txt"
check "GPU 0: sw_power_cap and hw_thermal_slowdown active, hw_slowdown not" bash -c "
  grep -qE '^flexwatt_gpu_clocks_event_reason_active\{$g0,reason=\"sw_power_cap\",.*\} 1$' '$tmp/metrics.txt' &&
  grep -qE '^flexwatt_gpu_clocks_event_reason_active\{$g0,reason=\"hw_thermal_slowdown\",.*\} 1$' '$tmp/metrics.txt' &&
  grep -qE '^flexwatt_gpu_clocks_event_reason_active\{$g0,reason=\"hw_slowdown\",.*\} 0$' '$tmp/metrics.txt'"
check "GPU 0: no failed cap write, persistence mode on" bash -c "
  grep -qE '^flexwatt_gpu_cap_write_failures_total\{$g0,hostname=\"[^\"]+\"\} 0$' '$tmp/metrics.txt' &&
  grep -qE '^flexwatt_gpu_persistence_mode_enabled\{$g0,hostname=\"[^\"]+\"\} 1$' '$tmp/metrics.txt'"
check "GPU 1: no reason active" test "$(grep -cE '^flexwatt_gpu_clocks_event_reason_active\{gpu="1".*\} 1$' "$tmp/metrics.txt")" -eq 0
kill -TERM "$agent"; wait "$agent"; agent=
finish prometheus_rules
