#!/usr/bin/env bash
# The join of the agent's series with dcgm-exporter's that docs/agent-api.md documents, run by a
# real Prometheus (Debian's) on loopback. dcgm-exporter is a recorded exposition
# (tests/fixtures/dcgm/dcgm-exporter-2gpu.prom: 2 H100s, labels gpu, UUID, pci_bus_id, device,
# modelName, Hostname, DCGM_FI_DRIVER_VERSION, pod/namespace/container on GPU 0) served by a
# small Python HTTP server on an ephemeral loopback port; the agent runs on the fake NVML
# library with the same 2 GPUs (same UUIDs), caps 350 W and 250 W. Both are scraped every
# second, then through Prometheus's HTTP API:
#  - flexwatt_gpu_power_cap_watts * on(gpu, UUID) group_left DCGM_FI_DEV_POWER_USAGE gives one
#    series per GPU, cap x dcgm-exporter's power (350 x 287.5, 250 x 143.25), with the agent's
#    labels (a join that matches nothing fails the test);
#  - group_left(pod, namespace) brings dcgm-exporter's pod and namespace to the agent's series
#    (GPU 0's pod; none on GPU 1);
#  - DCGM_FI_DEV_POWER_USAGE / on(gpu, UUID) group_left flexwatt_gpu_power_cap_watts gives the
#    power as a fraction of the cap with dcgm-exporter's labels (Hostname, pod, pci_bus_id);
#  - on(gpu, UUID, hostname) matches nothing against released dcgm-exporter (its host label is
#    Hostname), as the docs say.
# Under CI=true a missing tool (python3, prometheus, curl, jq) fails the test.
# Usage: dcgm_join.sh FLEXWATT_BIN SOURCE_DIR
# shellcheck disable=SC2016  # the $names in single quotes are jq's (--arg), not the shell's
set -u
bin=$1
src=$2
fixture=$src/tests/fixtures/dcgm/dcgm-exporter-2gpu.prom
# shellcheck source=lib/agent.sh
source "$(dirname "$0")/lib/agent.sh"
tmp=${tmp:?}
for t in python3 jq curl; do command -v "$t" >/dev/null || need_tool "$t"; done
prometheus=${FLEXWATT_PROMETHEUS:-$(command -v prometheus)}
if [ -z "$prometheus" ] || [ ! -x "$prometheus" ]; then need_tool "prometheus (Debian package prometheus)"; fi
use_fake_nvml
prom=
exporter=
trap '[ -n "$prom" ] && kill -9 "$prom" 2>/dev/null; [ -n "$exporter" ] && kill -9 "$exporter" 2>/dev/null; agent_cleanup' EXIT

# The agent: 2 GPUs with the fixture's UUIDs (the fake library's), caps 350 W and 250 W.
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
power * 200
limits 0 min=200 max=700 default=700 enforced=350 limit=350
limits 1 min=200 max=700 default=700 enforced=250 limit=250
SCRIPT
cat > "$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.2
controller: uncontrolled
budget_w: 1400
$agent_local
YAML
"$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent.out" 2>"$tmp/agent.err" &
track_agent $!
check "agent answers /healthz" wait_healthz

# dcgm-exporter: the fixture at /metrics, text format 0.0.4, on a port the kernel picks.
cat > "$tmp/exporter.py" <<'PY'
import http.server, sys
body = open(sys.argv[1], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os; os.rename(sys.argv[2] + ".tmp", sys.argv[2])
srv.serve_forever()
PY
python3 "$tmp/exporter.py" "$fixture" "$tmp/exporter.port" 2>"$tmp/exporter.err" &
exporter=$!
for _ in $(seq 50); do [ -s "$tmp/exporter.port" ] && break; sleep 0.1; done
dport=$(cat "$tmp/exporter.port" 2>/dev/null)
check "the recorded dcgm-exporter serves /metrics (port ${dport:-none})" \
  bash -c "curl -sf --max-time 2 'http://127.0.0.1:${dport:-0}/metrics' | grep -q '^DCGM_FI_DEV_POWER_USAGE{'"

# Prometheus on a free loopback port (the kernel's choice, released just before it binds).
pport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$tmp/prometheus.yml" <<YAML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: flexwatt
    static_configs: [{targets: ['127.0.0.1:$port']}]
  - job_name: dcgm-exporter
    static_configs: [{targets: ['127.0.0.1:${dport:-0}']}]
YAML
"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prom-data" \
  --web.listen-address="127.0.0.1:$pport" --log.level=error >"$tmp/prom.out" 2>"$tmp/prom.err" &
prom=$!
purl=http://127.0.0.1:$pport
# query PROMQL: the instant query's result (JSON array), [] on any error.
query() {
  curl -s --max-time 3 -G "$purl/api/v1/query" --data-urlencode "query=$1" 2>/dev/null |
    jq -c 'if .status == "success" then .data.result else [] end' 2>/dev/null || echo '[]'
}
ready=
start=$SECONDS
while [ $((SECONDS - start)) -lt 30 ]; do
  n=$(query 'count(DCGM_FI_DEV_POWER_USAGE) + count(flexwatt_gpu_power_cap_watts)' | jq '.[0].value[1] // "0" | tonumber')
  [ "${n:-0}" = 4 ] && { ready=1; break; }
  sleep 0.5
done
check "Prometheus scraped both: 2 GPUs from each (in $((SECONDS - start)) s)" test -n "$ready"
explain_process prometheus "$prom" "$tmp/prom.err"

u0=GPU-fa4e0000-0000-4000-8000-000000000000
u1=GPU-fa4e0000-0000-4000-8000-000000000001
# The documented join: one series per GPU, cap x power, the agent's labels.
r=$(query 'flexwatt_gpu_power_cap_watts * on(gpu, UUID) group_left DCGM_FI_DEV_POWER_USAGE')
echo "$r" > "$tmp/join.json"
check "the documented join gives one series per GPU ($(jq length <<<"$r") series)" test "$(jq length <<<"$r")" -eq 2
check "GPU 0: 350 W x 287.5 W, GPU 1: 250 W x 143.25 W ($(jq -c '[.[] | [.metric.gpu, .metric.UUID, .value[1]]]' <<<"$r"))" \
  jqt --arg u0 "$u0" --arg u1 "$u1" '
    (map({(.metric.UUID): {gpu: .metric.gpu, v: (.value[1] | tonumber)}}) | add) as $m
    | $m[$u0] == {gpu: "0", v: 100625} and $m[$u1] == {gpu: "1", v: 35812.5}' "$tmp/join.json"
check "the join keeps the agent's labels (hostname, job flexwatt), not dcgm-exporter's" \
  jqt 'all(.[]; .metric.hostname != null and .metric.job == "flexwatt" and .metric.Hostname == null
             and .metric.pci_bus_id == null)' "$tmp/join.json"

# dcgm-exporter's pod and namespace onto the agent's series.
r=$(query 'flexwatt_gpu_power_cap_watts * on(gpu, UUID) group_left(pod, namespace) DCGM_FI_DEV_POWER_USAGE')
check "group_left(pod, namespace): GPU 0 is grpo-7b-0 in ml-team, GPU 1 holds no pod ($(jq -c '[.[] | [.metric.gpu, .metric.pod, .metric.namespace]]' <<<"$r"))" \
  jqt --arg u0 "$u0" --arg u1 "$u1" 'length == 2
    and (map(select(.metric.UUID == $u0))[0].metric | .pod == "grpo-7b-0" and .namespace == "ml-team")
    and (map(select(.metric.UUID == $u1))[0].metric | .pod == null and .namespace == null)' <<<"$r"

# The other direction: power as a fraction of the cap, with dcgm-exporter's labels.
r=$(query 'DCGM_FI_DEV_POWER_USAGE / on(gpu, UUID) group_left flexwatt_gpu_power_cap_watts')
check "power / cap with dcgm-exporter's labels ($(jq -c '[.[] | [.metric.gpu, .metric.Hostname, .metric.pod, .value[1]]]' <<<"$r"))" \
  jqt --arg u0 "$u0" --arg u1 "$u1" 'length == 2
    and (map(select(.metric.UUID == $u0))[0] | .metric.Hostname == "gpu-node-17" and .metric.pod == "grpo-7b-0"
         and .metric.pci_bus_id == "00000000:18:00.0" and ((.value[1] | tonumber) - 287.5 / 350 | fabs) < 1e-9)
    and (map(select(.metric.UUID == $u1))[0] | ((.value[1] | tonumber) - 143.25 / 250 | fabs) < 1e-9)' <<<"$r"

# Released dcgm-exporter names its host label Hostname: on(gpu, UUID, hostname) matches nothing.
r=$(query 'flexwatt_gpu_power_cap_watts * on(gpu, UUID, hostname) group_left DCGM_FI_DEV_POWER_USAGE')
check "on(gpu, UUID, hostname) matches nothing against released dcgm-exporter ($(jq length <<<"$r"))" \
  test "$(jq length <<<"$r")" -eq 0

kill -TERM "$agent"; wait "$agent"; rc=$?; agent=
check "the agent exits 0 on SIGTERM ($rc)" test $rc -eq 0
kill -TERM "$prom" "$exporter" 2>/dev/null
wait "$prom" "$exporter" 2>/dev/null
prom=
exporter=
finish dcgm_join
