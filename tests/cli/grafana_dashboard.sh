#!/usr/bin/env bash
# The Grafana dashboard deploy/grafana/flexwatt-dashboard.json, checked against a real
# Prometheus: the JSON model is well formed (unique panel ids, every panel on the `${datasource}`
# Prometheus variable with at least one target that has an expr, the `datasource` and `hostname`
# template variables, every agent series filtered by `hostname=~"$hostname"`); then two agents
# (the sim backend, grpo-7b-a100 with a registered job; the fake NVML library, 2 GPUs, GPU 0 at
# its cap and in thermal slowdown, relabelled to hostname "fake-nvml-node") are scraped every
# second by Debian's `prometheus` on loopback, and every panel's every target, with $hostname set
# to the sim agent's hostname (then to both hosts, as Grafana writes a multi-value regex) and
# $__rate_interval to 10s, must be a valid query (status success) that returns at least one series
# whose labels fill its legend. Exempt from "at least one series": panels whose description says
# "Empty until it happens." (no series until e.g. a cap write fails), and, for the sim host
# alone, those that say "Hardware reads only" (throttle reasons: left out on sim). Every metric
# name any expr reads must be one Prometheus scraped from the agents, so a misspelt name fails
# even in an exempt panel. Under CI=true a missing tool fails the test.
# Usage: grafana_dashboard.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
dash=$src/deploy/grafana/flexwatt-dashboard.json
source "$(dirname "$0")/lib/agent.sh"
for t in python3 jq curl; do command -v "$t" >/dev/null || need_tool "$t"; done
prometheus=${FLEXWATT_PROMETHEUS:-$(command -v prometheus)}
if [ -z "$prometheus" ] || [ ! -x "$prometheus" ]; then need_tool "prometheus (Debian package prometheus)"; fi
use_fake_nvml
prom=
trap '[ -n "$prom" ] && kill -9 "$prom" 2>/dev/null; agent_cleanup' EXIT

# The checks, in Python: `check DASH` (the JSON model) and `query DASH URL SIM_HOST FAKE_HOST`
# (every target against Prometheus). Each failure is a line "FAIL: ..."; exit 1 if any.
read -r -d '' py <<'PY'
import json, re, sys, urllib.error, urllib.parse, urllib.request

fails = []
def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)

def panels_of(d):
    for p in d.get("panels", []):
        yield p
        for q in p.get("panels", []) or []:  # a collapsed row keeps its panels inside it
            yield q

def name(p):
    return "panel %s (%s)" % (p.get("id"), p.get("title", "?"))

# Agent series named in an expr with what follows them: flexwatt_* and dcgm-exporter's names.
SELECTOR = re.compile(r'(?<![\w:$])((?:flexwatt|DCGM_FI)_[A-Za-z_]+)(?![\w:])\s*(\{[^}]*\})?')
HOST = 'hostname=~"$hostname"'

def check(path):
    try:
        d = json.load(open(path))
    except Exception as e:
        fail("%s is not JSON: %s" % (path, e))
        return
    if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
        fail("schemaVersion %r (want a Grafana 9+ model, 36 or later)" % d.get("schemaVersion"))
    for k in ("uid", "title"):
        if not d.get(k):
            fail("dashboard has no %s" % k)
    vars_ = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
    ds = vars_.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        fail("no template variable `datasource` of type datasource, query prometheus")
    host = vars_.get("hostname")
    q = host.get("query") if host else None
    q = q.get("query") if isinstance(q, dict) else q
    if not host or host.get("type") != "query" or \
            re.sub(r"\s", "", q or "") != "label_values(flexwatt_node_power_watts,hostname)":
        fail("no template variable `hostname` from label_values(flexwatt_node_power_watts, hostname)")
    elif (host.get("datasource") or {}).get("uid") != "${datasource}":
        fail("the hostname variable does not query ${datasource}")
    ids, n_panels, n_targets = set(), 0, 0
    for p in panels_of(d):
        pid = p.get("id")
        if not isinstance(pid, int) or pid in ids:
            fail("%s: id missing or not unique" % name(p))
        ids.add(pid)
        gp = p.get("gridPos") or {}
        if not all(isinstance(gp.get(k), int) for k in "hwxy") or gp["x"] + gp["w"] > 24:
            fail("%s: gridPos %r" % (name(p), gp))
        if p.get("type") == "row":
            continue
        n_panels += 1
        if (p.get("datasource") or {}).get("uid") != "${datasource}" or \
                p["datasource"].get("type") != "prometheus":
            fail("%s: datasource is not the Prometheus ${datasource} variable" % name(p))
        targets = p.get("targets") or []
        if not targets:
            fail("%s: no target" % name(p))
        refs = set()
        for t in targets:
            n_targets += 1
            expr = t.get("expr", "")
            if not expr.strip():
                fail("%s: target %s has no expr" % (name(p), t.get("refId")))
            if not t.get("refId") or t["refId"] in refs:
                fail("%s: target refId %r missing or repeated" % (name(p), t.get("refId")))
            refs.add(t.get("refId"))
            tds = t.get("datasource")
            if tds is not None and tds.get("uid") != "${datasource}":
                fail("%s: target %s on another datasource" % (name(p), t.get("refId")))
            for m in SELECTOR.finditer(expr):
                if HOST not in (m.group(2) or ""):
                    fail("%s: %s is not filtered by %s" % (name(p), m.group(1), HOST))
    if n_panels < 15:
        fail("only %d panels" % n_panels)
    print("checked %d panels, %d targets" % (n_panels, n_targets))

def get(base, path, params):
    url = base + path + "?" + urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:  # a bad query: 400 with Prometheus's error
        try:
            return json.load(e)
        except Exception:
            return {"status": "http %d" % e.code}

def regex_literal(host):
    # The host as a regex inside a PromQL string: metacharacters escaped, the backslash doubled.
    return re.sub(r'([.\\+*?^$()\[\]{}|])', r'\\\\\1', host)

def query(path, base, sim_host, fake_host):
    d = json.load(open(path))
    names = set(get(base, "/api/v1/label/__name__/values", {}).get("data", []))
    hosts = get(base, "/api/v1/label/hostname/values",
                {"match[]": "flexwatt_node_power_watts"}).get("data", [])
    for h in (sim_host, fake_host):
        if h not in hosts:
            fail("the hostname variable's query lacks %s (has %s)" % (h, hosts))
    read = set()
    for p in panels_of(d):
        for t in p.get("targets") or []:
            read |= {m.group(1) for m in SELECTOR.finditer(t.get("expr", ""))}
    for n in sorted(read - names):
        fail("the dashboard reads %s, which the agents do not serve" % n)
    print("the dashboard reads %d agent metrics, all scraped" % len(read & names))
    runs = [("hostname=%s" % sim_host, regex_literal(sim_host), False),
            ("hostname=(%s|%s)" % (sim_host, fake_host),
             "(%s|%s)" % (regex_literal(sim_host), regex_literal(fake_host)), True)]
    for run, host_re, with_hw in runs:
        n_q = n_series = 0
        for p in panels_of(d):
            if p.get("type") == "row":
                continue
            desc = p.get("description", "")
            may_be_empty = "Empty until it happens" in desc or \
                ("Hardware reads only" in desc and not with_hw)
            for t in p.get("targets") or []:
                expr = t.get("expr", "")
                for var, val in (("$__rate_interval", "10s"), ("$__interval", "5s"),
                                 ("$__range", "1m"), ("${hostname}", host_re),
                                 ("$hostname", host_re)):
                    expr = expr.replace(var, val)
                where = "%s target %s [%s]" % (name(p), t.get("refId"), run)
                if "$" in expr:
                    fail("%s: unresolved variable in %s" % (where, expr))
                    continue
                r = get(base, "/api/v1/query", {"query": expr})
                n_q += 1
                if r.get("status") != "success":
                    fail("%s: query failed (%s: %s): %s" % (where, r.get("status"),
                                                            r.get("error"), expr))
                    continue
                res = r["data"]["result"]
                n_series += len(res)
                if not res and not may_be_empty:
                    fail("%s: no series: %s" % (where, expr))
                for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", "")):
                    for s in res:
                        if label not in s["metric"]:
                            fail("%s: legend label %s not in series %s" % (where, label, s["metric"]))
                            break
        print("%s: %d queries, %d series" % (run, n_q, n_series))

if sys.argv[1] == "check":
    check(sys.argv[2])
else:
    query(*sys.argv[2:])
sys.exit(1 if fails else 0)
PY

# py_checks NAME ARGS...: runs the Python checks (60 s at most); each FAIL line counts, as
# does a crash or a timeout.
py_checks() {
  local what=$1 out rc n; shift
  out=$(timeout 60 python3 -c "$py" "$@" 2>&1); rc=$?
  echo "$out"
  n=$(grep -c '^FAIL:' <<<"$out")
  fails=$((fails + n))
  if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then echo "FAIL: $what (exit $rc)"; fails=$((fails + 1)); fi
}

# free_port: a loopback TCP port free now, below Linux's ephemeral range as lib/agent.sh's $port.
free_port() {
  python3 -c '
import random, socket
while True:
    p = random.randrange(20000, 32000)
    try:
        socket.socket().bind(("127.0.0.1", p))
        print(p)
        break
    except OSError:
        pass'
}

# 1. The JSON model.
check "the dashboard exists" test -f "$dash"
py_checks "dashboard JSON" check "$dash"

# 2. Two agents: the sim backend (with a job) and the fake NVML library (throttle reasons).
cat > "$tmp/agent.yaml" <<YAML
backend: sim:$src/scenarios/grpo-7b-a100.yaml
period_s: 0.1
time_scale: 10
controller: pid:knob=gen_concurrency
window_s: 2
$agent_local
YAML
"$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent.out" 2>"$tmp/agent.err" &
track_agent $!
sim_agent=$agent
check "sim agent answers /healthz" wait_healthz
sim_port=$port
mkdir "$tmp/fake"
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
power * 300
limits * min=100 max=400 default=400 enforced=350 limit=350
reasons 0 0x44
reasons 1 0
SCRIPT
port=$(free_port)
cat > "$tmp/fake/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: uncontrolled
budget_w: 700
restore_file: $tmp/fake/saved.json
lock_file: $tmp/fake/agent.lock
server:
  unix_socket: $tmp/fake/agent.sock
  tcp_port: $port
YAML
"$bin" agent --config "$tmp/fake/agent.yaml" >"$tmp/fake/agent.out" 2>"$tmp/fake/agent.err" &
track_agent $!
fake_agent=$agent
check "fake-NVML agent answers /healthz" wait_healthz
fake_port=$port
api=http://127.0.0.1:$sim_port
sim_host=$(curl -s --max-time 3 "$api/v1/status" | jq -r '.hostname // empty')
check "the sim agent names its host (${sim_host:-none})" test -n "$sim_host"
fake_host='fake-nvml-node'
curl -sf --max-time 3 -X POST "$api/v1/jobs" -d '{"id": "grpo-7b", "kind": "grpo",
  "knobs": {"gen_concurrency": {"min": 8, "max": 256, "step": 8, "default": 64}}}' >/dev/null
check "a job registered on the sim agent" test $? -eq 0
steps=0
progress() {
  steps=$((steps + 1))
  curl -sf --max-time 2 -X POST "$api/v1/jobs/grpo-7b/progress" -d "{\"tokens_total\": $((steps * 50000)),
    \"steps_total\": $steps, \"phase\": \"generate\"}" >/dev/null
}
progress

# 3. Prometheus scrapes both every second; the fake agent's series get hostname fake-nvml-node.
pport=$(free_port)
cat > "$tmp/prometheus.yml" <<YAML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: flexwatt
    static_configs: [{targets: ['127.0.0.1:$sim_port']}]
  - job_name: flexwatt-fake-nvml
    static_configs: [{targets: ['127.0.0.1:$fake_port']}]
    metric_relabel_configs:
      - {source_labels: [hostname], target_label: hostname, replacement: $fake_host}
YAML
"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prom-data" \
  --web.listen-address="127.0.0.1:$pport" --log.level=error >"$tmp/prom.out" 2>"$tmp/prom.err" &
prom=$!
purl=http://127.0.0.1:$pport
# Ready when both targets have 5 scrapes and the job's series 5 (at most 30 s).
ready=
start=$SECONDS
i=0
while [ $((SECONDS - start)) -lt 30 ]; do
  i=$((i + 1))
  [ $((i % 2)) -eq 0 ] && progress
  n=$(curl -s --max-time 2 -G "$purl/api/v1/query" --data-urlencode \
    'query=count_over_time(flexwatt_loop_ticks_total[1m]) >= 5 or count_over_time(flexwatt_job_knob_value[1m]) >= 5' \
    2>/dev/null | jq '.data.result | length' 2>/dev/null)
  [ "${n:-0}" -ge 3 ] && { ready=1; break; }
  sleep 0.5
done
check "Prometheus has scraped both agents 5 times (in $((SECONDS - start)) s)" test -n "$ready"
explain_process prometheus "$prom" "$tmp/prom.err"

# 4. Every panel's every target against Prometheus.
[ -n "$ready" ] && py_checks "queries" query "$dash" "$purl" "$sim_host" "$fake_host"

kill -TERM "$sim_agent" "$fake_agent"
wait "$sim_agent"; rc1=$?
wait "$fake_agent"; rc2=$?
agent=
check "both agents exit 0 on SIGTERM ($rc1, $rc2)" test "$rc1" -eq 0 -a "$rc2" -eq 0
kill -TERM "$prom"; wait "$prom"; rc=$?; prom=
check "Prometheus stops on SIGTERM ($rc)" test "$rc" -eq 0
[ "$fails" -ne 0 ] && tail -n 5 "$tmp/agent.err" "$tmp/fake/agent.err"
finish grafana_dashboard
