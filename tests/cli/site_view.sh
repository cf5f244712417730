#!/usr/bin/env bash
# The coordinator's site view (GET /site) in headless Chromium: one etcd member, a coordinator
# with its grid endpoint on loopback, two nodes registered (their records put in etcd, as an
# agent writes them) and one grid event; the page shows the leader, the budget, the grid's
# effective target, each node's share (the split the leader wrote to etcd) and the event.
# With FLEXWATT_SHOT_DIR set, saves dashboard-site.png there (docs/ keeps the one checked by eye).
# Usage: site_view.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
source "$(dirname "$0")/lib/browser.sh"
command -v etcd >/dev/null || need_tool "etcd (etcd-server)"
command -v etcdctl >/dev/null || need_tool "etcdctl (etcd-client)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
start_etcd "$tmp"
up=$?
pids+=("$etcd_pid")
check "etcd is up" test $up = 0
port=$((base + 2))
cat >"$tmp/c.yaml" <<YAML
site: hall-a
id: coord-a
etcd: [$c]
budget_w: 9000
refresh_s: 0.5
expiry_s: 5
listen: 127.0.0.1:$port
allow_unauthenticated_writes: true
audit_log: $tmp/audit.log
YAML
now=$(date +%s)
for n in node-1 node-2; do
  ETCDCTL_API=3 etcdctl --endpoints "$c" put "/flexwatt/hall-a/nodes/$n" \
    "{\"node\":\"$n\",\"gpus\":8,\"nameplate_w\":5600,\"min_w\":800,\"draw_w\":4200,\"cap_w\":5600,\"jobs\":[],\"time_unix_s\":$now,\"safe_w\":3500}" \
    >/dev/null
done
"$bin" coordinator --config "$tmp/c.yaml" >"$tmp/coord.out" 2>"$tmp/coord.err" &
pids+=($!)
coord_pid=$!
ok=0
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/v1/grid/status" | jq -e '.leader == true and .site_w > 0' >/dev/null && { ok=1; break; }
  sleep 0.1
done
check "the coordinator leads and answers /v1/grid/status" test $ok = 1
explain_process coordinator "$coord_pid" "$tmp/coord.err" "$tmp/coord.out"
# A grid event from now for an hour at 7000 W.
code=$(curl -s -o "$tmp/put.json" -w '%{http_code}' -X PUT "http://127.0.0.1:$port/v1/grid/target" \
  -H 'Content-Type: application/json' \
  -d "{\"value\": 7000, \"start_time\": \"$(date -u -d "@$now" +%Y-%m-%dT%H:%M:%SZ)\", \"end_time\": \"$(date -u -d "@$((now + 3600))" +%Y-%m-%dT%H:%M:%SZ)\", \"correlation_id\": \"ev-1\"}")
check "the grid event is accepted (HTTP $code: $(head -c 200 "$tmp/put.json" 2>/dev/null))" test "$code" = 200
explain_process coordinator "$coord_pid" "$tmp/coord.err" "$tmp/coord.out" "$tmp/etcd.log"
shares=0
for _ in $(seq 50); do  # the leader's next rounds split the effective target over both nodes
  curl -s "http://127.0.0.1:$port/site" >"$tmp/site.html"
  grep -q '"node":"node-2"' "$tmp/site.html" && grep -q '"effective_w":7000' "$tmp/site.html" && { shares=1; break; }
  sleep 0.2
done
check "GET /site embeds both nodes and the effective target" test $shares = 1
check "the page needs no network" test "$(grep -Ec 'https?://' "$tmp/site.html")" -eq 0
dump_dom "http://127.0.0.1:$port/site?static=1" "$tmp/site.dom"
st=$(status_of "$tmp/site.dom")
check "the site view drew ('$st')" grep -Eq '^ok points=[1-9][0-9]* site nodes=2 events=1$' <<<"$st"
check "the shares plot has its axis titles" \
  grep -q '<canvas id="site-shares"[^>]*aria-label="node GPU budget (W) against node"' "$tmp/site.dom"
check "it names the leader" grep -q '<div class="k">coordinator</div><div class="v">leader</div>' "$tmp/site.dom"
ts=$'\xe2\x80\x89'  # the page groups thousands with a thin space
check "the budget card" grep -q "<div class=\"k\">site budget</div><div class=\"v\">9${ts}000 W</div>" "$tmp/site.dom"
check "the effective target card" grep -q "effective target (after the grid)</div><div class=\"v\">7${ts}000 W</div>" "$tmp/site.dom"
# Each node's share on the page is the assignment the leader wrote to etcd.
for n in node-1 node-2; do
  w=$(ETCDCTL_API=3 etcdctl --endpoints "$c" get "/flexwatt/hall-a/assign/$n" --print-value-only | jq -r '.watts | round')
  shown=$(python3 - "$tmp/site.dom" "$n" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r'<tr><td>' + re.escape(sys.argv[2]) + r'</td><td>([^<]*)</td>', t)
print(m.group(1).replace("\u2009", "").replace(" W", "") if m else "missing")
PY
)
  check "$n: the page's share ($shown W) is the assignment in etcd ($w W)" test "$shown" = "$w"
done
check "the event row" grep -q "<td>7${ts}000 W</td><td>step</td><td>no</td><td>ev-1</td>" "$tmp/site.dom"
if [ -n "${FLEXWATT_SHOT_DIR:-}" ]; then
  screenshot "http://127.0.0.1:$port/site?static=1" "$FLEXWATT_SHOT_DIR/dashboard-site.png" 1280,1000
  check "the screenshot was written" test -s "$FLEXWATT_SHOT_DIR/dashboard-site.png"
fi
finish site_view
