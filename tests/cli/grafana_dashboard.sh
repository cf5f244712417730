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
# even in an exempt panel.
# The "Site (coordinator)" row, the same way: one etcd member (Debian's etcd) and two
# `flexwatt coordinator`s of site "hall-a" on loopback with a token file (one leads, one stands
# by), two node records put in etcd (floor 1600 W) and one grid target of 1000 W for an hour (a
# shortfall of 600 W); Prometheus scrapes both coordinators' GET /metrics with a read token and
# loads deploy/prometheus/flexwatt-coordinator-rules.yaml. The model: the `site` variable
# (label_values(flexwatt_site_budget_watts, site)), every site series filtered by
# `site=~"$site"`, every flexwatt_site_* target filtered by the leader
# (flexwatt_coordinator_leader == 1); against Prometheus ($site = hall-a): every site target
# returns a series, and one per site (the standby's figures left out); the shortfall panel gives
# the 600 W of GET /v1/grid/status; the alert FlexwattSiteShortfall is pending or firing for
# hall-a; every flexwatt_* name the coordinator rules read is scraped. Under CI=true a missing
# tool fails the test.
# Usage: grafana_dashboard.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
dash=$src/deploy/grafana/flexwatt-dashboard.json
crules=$src/deploy/prometheus/flexwatt-coordinator-rules.yaml
source "$(dirname "$0")/lib/agent.sh"
for t in python3 jq curl etcd etcdctl; do command -v "$t" >/dev/null || need_tool "$t"; done
prometheus=${FLEXWATT_PROMETHEUS:-$(command -v prometheus)}
if [ -z "$prometheus" ] || [ ! -x "$prometheus" ]; then need_tool "prometheus (Debian package prometheus)"; fi
use_fake_nvml
prom=
site_pids=()  # etcd and the coordinators
cleanup() {
  local p
  [ -n "$prom" ] && kill -9 "$prom" 2>/dev/null
  for p in "${site_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  agent_cleanup
}
trap cleanup EXIT

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
SITE = 'site=~"$site"'
def is_site(metric):  # the coordinator's series (its grid endpoint's /metrics), by site
    return metric.startswith("flexwatt_site_") or metric == "flexwatt_coordinator_leader"
LEADER = re.compile(r'and\s+on\s*\(\s*site\s*,\s*instance\s*\)\s*flexwatt_coordinator_leader\{[^}]*\}\s*==\s*1')

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
    site = vars_.get("site")
    q = site.get("query") if site else None
    q = q.get("query") if isinstance(q, dict) else q
    if not site or site.get("type") != "query" or \
            re.sub(r"\s", "", q or "") != "label_values(flexwatt_site_budget_watts,site)":
        fail("no template variable `site` from label_values(flexwatt_site_budget_watts, site)")
    elif (site.get("datasource") or {}).get("uid") != "${datasource}":
        fail("the site variable does not query ${datasource}")
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
            site_metrics = False
            for m in SELECTOR.finditer(expr):
                want = SITE if is_site(m.group(1)) else HOST
                site_metrics |= m.group(1).startswith("flexwatt_site_")
                if want not in (m.group(2) or ""):
                    fail("%s: %s is not filtered by %s" % (name(p), m.group(1), want))
            # Only the leader's figures are current: each site gauge taken where it leads.
            if site_metrics and not LEADER.search(expr):
                fail("%s: target %s reads flexwatt_site_* without `and on (site, instance) "
                     "flexwatt_coordinator_leader{...} == 1`" % (name(p), t.get("refId")))
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

def query(path, base, sim_host, fake_host, site, rules):
    d = json.load(open(path))
    names = set(get(base, "/api/v1/label/__name__/values", {}).get("data", []))
    hosts = get(base, "/api/v1/label/hostname/values",
                {"match[]": "flexwatt_node_power_watts"}).get("data", [])
    for h in (sim_host, fake_host):
        if h not in hosts:
            fail("the hostname variable's query lacks %s (has %s)" % (h, hosts))
    sites = get(base, "/api/v1/label/site/values",
                {"match[]": "flexwatt_site_budget_watts"}).get("data", [])
    if site not in sites:
        fail("the site variable's query lacks %s (has %s)" % (site, sites))
    read = set()
    for p in panels_of(d):
        for t in p.get("targets") or []:
            read |= {m.group(1) for m in SELECTOR.finditer(t.get("expr", ""))}
    for n in sorted(read - names):
        fail("the dashboard reads %s, which the agents and the coordinator do not serve" % n)
    print("the dashboard reads %d metrics (%d of the coordinator), all scraped" %
          (len(read & names), len({n for n in read & names if is_site(n)})))
    # The coordinator rules: every name they read, comments left out, is scraped.
    text = "\n".join(l.split("#")[0] for l in open(rules).read().splitlines())
    rread = {m.group(1) for m in SELECTOR.finditer(text)}
    for n in sorted(rread - names):
        fail("%s reads %s, which the coordinator does not serve" % (rules, n))
    if not rread:
        fail("%s reads no flexwatt_* series" % rules)
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
                                 ("$hostname", host_re), ("${site}", regex_literal(site)),
                                 ("$site", regex_literal(site))):
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
                # A site gauge is the leader's alone: one series per site, not one per coordinator.
                if any(m.group(1).startswith("flexwatt_site_") for m in SELECTOR.finditer(expr)):
                    per_site = [s["metric"].get("site") for s in res]
                    if len(per_site) != len(set(per_site)):
                        fail("%s: %d series for sites %s (the standby's too?): %s" %
                             (where, len(res), per_site, expr))
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

# 2. etcd (started here, waited for after the agents) and two agents: the sim backend (with a
# job) and the fake NVML library (throttle reasons).
# start_etcd: one member on two random loopback ports ($ebase, $ebase + 1), in the background.
start_etcd() {
  ebase=$(free_port)
  etcd_url=http://127.0.0.1:$ebase
  rm -rf "$tmp/etcd"
  etcd --name m0 --data-dir "$tmp/etcd" --listen-client-urls "$etcd_url" \
    --advertise-client-urls "$etcd_url" --listen-peer-urls "http://127.0.0.1:$((ebase + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ebase + 1))" \
    --initial-cluster "m0=http://127.0.0.1:$((ebase + 1))" --log-level warn --logger zap \
    --unsafe-no-fsync >"$tmp/etcd.log" 2>&1 &
  etcd_pid=$!
  site_pids+=("$etcd_pid")
}
start_etcd
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

# 3. The site: etcd up (another pair of ports if the first was taken, 3 tries of 5 s), two node
# records (min_w 800 W each: the floor is 1600 W), coordinator a, which leads, then b, which
# stands by; both with a token file (read and control tokens).
up=0
for try in 1 2 3; do
  for _ in $(seq 50); do
    curl -sf --max-time 1 "$etcd_url/health" 2>/dev/null | grep -q true && { up=1; break; }
    kill -0 "$etcd_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ $up = 1 ] && break
  kill -9 "$etcd_pid" 2>/dev/null; wait "$etcd_pid" 2>/dev/null
  [ "$try" -lt 3 ] && start_etcd
done
check "etcd is up" test $up = 1
explain_process etcd "$etcd_pid" "$tmp/etcd.log"
site=hall-a
read_token=read-token-$RANDOM$RANDOM-0123456789
control_token=control-token-$RANDOM$RANDOM-0123456789
printf 'grafana read %s\nops control %s\n' "$read_token" "$control_token" >"$tmp/tokens"
chmod 600 "$tmp/tokens"
printf '%s\n' "$read_token" >"$tmp/read.token"
now=$(date +%s)
for n in node-1 node-2; do
  ETCDCTL_API=3 etcdctl --endpoints "$etcd_url" put "/flexwatt/$site/nodes/$n" \
    "{\"node\":\"$n\",\"gpus\":8,\"nameplate_w\":5600,\"min_w\":800,\"draw_w\":4200,\"cap_w\":5600,\"jobs\":[],\"time_unix_s\":$now,\"safe_w\":3500}" \
    >/dev/null
done
declare -A cport cpid
for id in a b; do
  cport[$id]=$(free_port)
  cat >"$tmp/coord-$id.yaml" <<YAML
site: $site
id: coord-$id
etcd: [$etcd_url]
budget_w: 9000
refresh_s: 0.5
expiry_s: 60
listen: 127.0.0.1:${cport[$id]}
token_file: $tmp/tokens
YAML
  "$bin" coordinator --config "$tmp/coord-$id.yaml" >"$tmp/coord-$id.out" 2>"$tmp/coord-$id.err" &
  cpid[$id]=$!
  site_pids+=("$!")
  ok=0
  for _ in $(seq 100); do  # a leads (about 10 s at most); b answers as a standby
    curl -sf --max-time 1 -H "Authorization: Bearer $read_token" \
      "http://127.0.0.1:${cport[$id]}/v1/grid/status" 2>/dev/null |
      jq -e --arg id "$id" 'if $id == "a" then .leader == true and .site_w > 0 else .leader == false end' \
      >/dev/null 2>&1 && { ok=1; break; }
    sleep 0.1
  done
  check "coordinator $id answers /v1/grid/status as $([ $id = a ] && echo leader || echo standby)" test $ok = 1
  explain_process "coordinator $id" "${cpid[$id]}" "$tmp/coord-$id.err" "$tmp/coord-$id.out"
done
gurl=http://127.0.0.1:${cport[a]}
code=$(curl -s --max-time 3 -o /dev/null -w '%{http_code}' "$gurl/metrics")
check "the coordinator's /metrics needs a token (HTTP $code)" test "$code" = 401
# A grid target of 1000 W for an hour: 600 W below the floor, so the site cannot hold it.
code=$(curl -s --max-time 3 -o "$tmp/put.json" -w '%{http_code}' -X PUT "$gurl/v1/grid/target" \
  -H "Authorization: Bearer $control_token" -H 'Content-Type: application/json' \
  -d "{\"value\": 1000, \"end_time\": $((now + 3600)), \"correlation_id\": \"ev-deep\"}")
check "the grid target is accepted (HTTP $code: $(head -c 200 "$tmp/put.json" 2>/dev/null))" test "$code" = 200

# 4. Prometheus scrapes the agents and the coordinators every second; the fake agent's series
# get hostname fake-nvml-node; the coordinators' with the read token.
pport=$(free_port)
cat > "$tmp/prometheus.yml" <<YAML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
rule_files: ['$crules']
scrape_configs:
  - job_name: flexwatt-coordinator
    authorization: {type: Bearer, credentials_file: $tmp/read.token}
    static_configs: [{targets: ['127.0.0.1:${cport[a]}', '127.0.0.1:${cport[b]}']}]
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
# Ready when both agents have 5 scrapes and the job's series 5, and both coordinators 2 with
# the shortfall (at most 30 s).
ready=
start=$SECONDS
i=0
while [ $((SECONDS - start)) -lt 30 ]; do
  i=$((i + 1))
  [ $((i % 2)) -eq 0 ] && progress
  n=$(curl -s --max-time 2 -G "$purl/api/v1/query" --data-urlencode \
    'query=count_over_time(flexwatt_loop_ticks_total[1m]) >= 5 or count_over_time(flexwatt_job_knob_value[1m]) >= 5
           or count_over_time(flexwatt_coordinator_leader[1m]) >= 2 and on (instance) flexwatt_site_shortfall_watts > 0
           or count_over_time(flexwatt_coordinator_leader[1m]) >= 2 and on (instance) flexwatt_coordinator_leader == 0' \
    2>/dev/null | jq '.data.result | length' 2>/dev/null)
  [ "${n:-0}" -ge 5 ] && { ready=1; break; }
  sleep 0.5
done
check "Prometheus has scraped both agents 5 times and both coordinators twice (in $((SECONDS - start)) s)" test -n "$ready"
explain_process prometheus "$prom" "$tmp/prom.err"

# 5. Every panel's every target against Prometheus.
[ -n "$ready" ] && py_checks "queries" query "$dash" "$purl" "$sim_host" "$fake_host" "$site" "$crules"

# 6. The shortfall panel's figure is /v1/grid/status's; the alert on it is pending or firing.
want=$(curl -s --max-time 3 -H "Authorization: Bearer $read_token" "$gurl/v1/grid/status" | jq -r '.shortfall_w')
expr=$(jq -r '.panels[] | select(.title == "Shortfall") | .targets[0].expr' "$dash" | sed "s/\$site/$site/g")
got=$(curl -s --max-time 3 -G "$purl/api/v1/query" --data-urlencode "query=$expr" |
  jq -r --arg s "$site" '[.data.result[] | select(.metric.site == $s) | .value[1]] | if length == 1 then .[0] else "none" end')
check "the shortfall panel gives ${got:-nothing} W, /v1/grid/status ${want:-nothing} W (600 W below the floor)" \
  test -n "$got" -a "$got" = "$want" -a "$want" = 600
state=none
for _ in $(seq 20); do  # the rule group runs every second
  state=$(curl -s --max-time 2 "$purl/api/v1/alerts" | jq -r --arg s "$site" \
    '[.data.alerts[] | select(.labels.alertname == "FlexwattSiteShortfall" and .labels.site == $s) | .state] | first // "none"')
  [ "$state" = pending ] || [ "$state" = firing ] && break
  sleep 0.25
done
check "FlexwattSiteShortfall is pending or firing for $site ($state)" test "$state" = pending -o "$state" = firing

kill -TERM "$sim_agent" "$fake_agent"
wait "$sim_agent"; rc1=$?
wait "$fake_agent"; rc2=$?
agent=
check "both agents exit 0 on SIGTERM ($rc1, $rc2)" test "$rc1" -eq 0 -a "$rc2" -eq 0
kill -TERM "$prom"; wait "$prom"; rc=$?; prom=
check "Prometheus stops on SIGTERM ($rc)" test "$rc" -eq 0
kill -TERM "${cpid[b]}" "${cpid[a]}"
wait "${cpid[a]}"; rc1=$?
wait "${cpid[b]}"; rc2=$?
check "both coordinators exit 0 on SIGTERM ($rc1, $rc2)" test "$rc1" -eq 0 -a "$rc2" -eq 0
kill -TERM "$etcd_pid"; wait "$etcd_pid" 2>/dev/null; site_pids=()
[ "$fails" -ne 0 ] && tail -n 5 "$tmp/agent.err" "$tmp/fake/agent.err" "$tmp/coord-a.err" "$tmp/coord-b.err"
finish grafana_dashboard
