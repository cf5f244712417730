#!/usr/bin/env bash
# Real-GPU, read-only check of the NVML binding: lists the GPUs, records a 5 s trace at 0.1 s
# with `flexwatt sample` against the machine's real libnvidia-ml.so.1, and prints the trace
# head, its meta.json and nvidia-smi's own power readings for comparison.
#
# READ-ONLY: this script never sets power limits, clocks, persistence mode or application
# clocks, and never resets anything. It only runs `nvidia-smi -L`, `nvidia-smi --query-gpu`
# `flexwatt sample` (which only reads), `flexwatt agent` with read_only: true (never writes) and
# scripts/nvml_probe.py (NVML read calls only).
#
# Last, scripts/nvml_probe.py checks the fake NVML library's per-model assumptions
# (tests/telemetry/fake_nvml, `profile`): whether PowerUsage and fields 185/186 are 1 s averages
# or instantaneous, the energy counter's update period, call latencies; MATCH / DIFFERS per item.
# It needs a varying load to tell averages from instants: PROBE_LOAD='COMMAND' runs COMMAND (a
# training job, a periodic load) in the background while it probes, and stops it after.
#
# Usage: scripts/gpu_check.sh [FLEXWATT_BIN]   (default: build/flexwatt; builds nothing)
# Output goes to $OUT (default: a new temporary directory): $OUT/trace, $OUT/agent,
# $OUT/nvml_probe.json (and .txt). PROBE_S: the probe's seconds per GPU (default 10).
# Exit: the sample's code, else the agent's, else 2 if the probe could not run (a probe that
# finds differences, exit 1, is a finding about the fake, not a failure of this check).
set -euo pipefail
bin=${1:-build/flexwatt}
[ -x "$bin" ] || { echo "gpu_check: no flexwatt binary at $bin (build it first)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
unset FLEXWATT_NVML_LIBRARY FAKE_NVML_SCRIPT  # the real driver's library, never the fake

echo "== nvidia-smi -L"
nvidia-smi -L || echo "(nvidia-smi failed: $?)"
echo "== nvidia-smi power readings before (read-only query)"
nvidia-smi --query-gpu=index,name,power.draw,power.limit,enforced.power.limit,clocks.sm,temperature.gpu \
  --format=csv || true

echo "== flexwatt sample --interval-s 0.1 --duration-s 5 --out $OUT/trace"
set +e
"$bin" sample --interval-s 0.1 --duration-s 5 --out "$OUT/trace" --json | tee "$OUT/report.json"
rc=${PIPESTATUS[0]}
set -e
echo "exit code: $rc"

echo "== nvidia-smi power readings after (read-only query)"
nvidia-smi --query-gpu=index,power.draw,enforced.power.limit --format=csv || true

if [ -f "$OUT/trace/gpus.csv" ]; then
  echo "== $OUT/trace/gpus.csv (head; $(($(wc -l <"$OUT/trace/gpus.csv") - 1)) rows)"
  head -n 17 "$OUT/trace/gpus.csv"
  echo "== per-GPU rows, mean and max power_w"
  awk -F, 'NR>1 && $3!="" {n[$2]++; s[$2]+=$3; if ($3>m[$2]) m[$2]=$3}
           END {for (g in n) printf "gpu %s: %d rows, mean %.1f W, max %.1f W\n", g, n[g], s[g]/n[g], m[g]}' \
    "$OUT/trace/gpus.csv"
fi
if [ -f "$OUT/trace/meta.json" ]; then
  echo "== $OUT/trace/meta.json"
  cat "$OUT/trace/meta.json"
fi

# The node agent read-only for 30 s on the real GPU(s): read_only never writes a cap (no save,
# no restore either); the status and /metrics are read back over loopback.
echo "== flexwatt agent (read_only, nvml) for ${AGENT_S:-30} s"
mkdir -p "$OUT/agent"
cat > "$OUT/agent/agent.yaml" <<YAML
backend: nvml
read_only: true
period_s: 0.5
controller: uncontrolled
restore_file: $OUT/agent/saved.json
lock_file: $OUT/agent/agent.lock
server: {unix_socket: $OUT/agent/agent.sock, tcp_port: 19479}
YAML
set +e
"$bin" agent --config "$OUT/agent/agent.yaml" --duration-s "${AGENT_S:-30}" --json \
  >"$OUT/agent/summary.json" 2>"$OUT/agent/agent.err" &
apid=$!
sleep 5
curl -s --max-time 2 http://127.0.0.1:19479/v1/status >"$OUT/agent/status.json"
curl -s --max-time 2 http://127.0.0.1:19479/metrics >"$OUT/agent/metrics.txt"
wait "$apid"
arc=$?
set -e
echo "agent exit code: $arc; summary: $(cat "$OUT/agent/summary.json")"
head -c 1500 "$OUT/agent/status.json"; echo
grep -E '^flexwatt_(gpu_power_watts|gpu_power_cap_watts|loop_late_ticks_total)' "$OUT/agent/metrics.txt" || true
test ! -e "$OUT/agent/saved.json" || echo "FAIL: read_only agent saved caps"
nvidia-smi --query-gpu=index,enforced.power.limit --format=csv || true

# The fake's per-model assumptions, checked on this GPU (read-only; see the header).
echo "== scripts/nvml_probe.py (read-only), ${PROBE_S:-10} s per GPU"
lpid=
if [ -n "${PROBE_LOAD:-}" ]; then
  echo "load while probing: $PROBE_LOAD"
  setsid bash -c "$PROBE_LOAD" >"$OUT/probe_load.log" 2>&1 &
  lpid=$!
  sleep 3  # let the load start
fi
set +e
python3 "$(dirname "$0")/nvml_probe.py" --duration-s "${PROBE_S:-10}" --json "$OUT/nvml_probe.json" \
  | tee "$OUT/nvml_probe.txt"
prc=${PIPESTATUS[0]}
[ -n "$lpid" ] && kill -- "-$lpid" 2>/dev/null
set -e
echo "nvml_probe exit code: $prc (0: the fake matches; 1: it differs, fix the fake; 2: no probe)"

[ "$rc" -ne 0 ] && exit "$rc"
[ "$arc" -ne 0 ] && exit "$arc"
[ "$prc" -ge 2 ] && exit 2
exit 0
