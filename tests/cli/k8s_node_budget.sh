#!/usr/bin/env bash
# The Kubernetes budget path without a cluster: deploy/kubernetes/node_budget.py (the agent
# DaemonSet's sidecar) against a fake Kubernetes API server (Python, plain http, bearer token
# checked, merge-patch of labels applied to its Node) and an agent on the fake NVML library (2
# GPUs, caps 100..400 W, default 400). The node's budget annotation reaches the agent
# (PUT /v1/budget, once: an unchanged annotation sends nothing), the GPUs' cap range comes back
# as node labels (patched only when they differ), a label names the budget when no annotation
# does, a bad value or a refused token is an error that changes nothing; the DaemonSet runs the
# sidecar with the node's name and a service account that may get and patch nodes.
# Usage: k8s_node_budget.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
build=$(dirname "$bin")
fake=$build/tests/telemetry/fake_nvml/libnvidia-ml.so.1
sidecar=$src/deploy/kubernetes/node_budget.py
source "$(dirname "$0")/lib/agent.sh"
[ -f "$fake" ] || { echo "FAIL: fake NVML library not built at $fake"; exit 1; }
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
power * 300
limits * min=100 max=400 default=400 enforced=400
SCRIPT
cat > "$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: uncontrolled
budget_w: 700
$agent_local
  audit_log: $tmp/audit.jsonl
YAML
export FAKE_NVML_SCRIPT=$tmp/script.txt FAKE_NVML_STATE=$tmp/state.txt
"$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent.out" 2>"$tmp/agent.err" &
track_agent $!
check "agent answers /healthz" wait_healthz

# The fake API server: GET/PATCH /api/v1/nodes/node-1 on $tmp/node.json, token "k8s-token".
kport=$((port + 1))
cat > "$tmp/fake_api.py" <<'PY'
import http.server, json, sys
port, node_file, log_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def handle_any(self, method):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else ""
        with open(log_file, "a") as f:
            f.write(json.dumps({"method": method, "path": self.path, "body": body,
                                "ctype": self.headers.get("Content-Type")}) + "\n")
        if self.headers.get("Authorization") != "Bearer k8s-token":
            return self.answer(401, {"kind": "Status", "message": "Unauthorized"})
        if self.path != "/api/v1/nodes/node-1":
            return self.answer(404, {"kind": "Status", "message": "not found"})
        node = json.load(open(node_file))
        if method == "PATCH":
            if self.headers.get("Content-Type") != "application/merge-patch+json":
                return self.answer(415, {"message": "unsupported patch type"})
            node["metadata"].setdefault("labels", {}).update(json.loads(body)["metadata"]["labels"])
            json.dump(node, open(node_file, "w"))
        self.answer(200, node)
    def do_GET(self): self.handle_any("GET")
    def do_PATCH(self): self.handle_any("PATCH")
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
node() {  # node ANNOTATIONS_JSON LABELS_JSON: the fake API's Node
  printf '{"kind":"Node","metadata":{"name":"node-1","annotations":%s,"labels":%s}}' "$1" "$2" > "$tmp/node.json"
}
node '{"flexwatt.io/budget-watts":"650","flexwatt.io/budget-window-s":"10"}' '{"kubernetes.io/hostname":"node-1"}'
python3 "$tmp/fake_api.py" "$kport" "$tmp/node.json" "$tmp/api.jsonl" 2>"$tmp/api.err" &
agent_pids+=("$!")
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$kport/" && break; sleep 0.1; done
echo k8s-token > "$tmp/k8s-token"
run_sidecar() {  # run_sidecar OUT [TOKEN_FILE]: one pass; sets $rc
  python3 "$sidecar" --once --node node-1 --socket "$tmp/agent.sock" \
    --api "http://127.0.0.1:$kport" --token-file "${2:-$tmp/k8s-token}" >"$tmp/$1.jsonl" 2>"$tmp/$1.err"
  rc=$?
}
status() { curl -s --max-time 2 "http://127.0.0.1:$port/v1/status"; }
# wait_budget W: the agent's loop applies a write at its next tick (<= 3 s).
wait_budget() {
  for _ in $(seq 30); do [ "$(status | jq '.budget.watts')" = "$1" ] && return 0; sleep 0.1; done
  echo "  budget $(status | jq -c '.budget')"; return 1
}
puts() { jq -s '[.[] | select(.method == "PUT" and .path == "/v1/budget")] | length' "$tmp/audit.jsonl"; }
patches() { jq -s '[.[] | select(.method == "PATCH")] | length' "$tmp/api.jsonl"; }

run_sidecar pass1
check "pass 1 exits 0 ($(cat "$tmp/pass1.err" "$tmp/pass1.jsonl" | tr '\n' ' '))" test "$rc" -eq 0
check "the annotation's 650 W reached the agent" wait_budget 650
check "with its 10 s window, from the API" jqt '.budget.window_s == 10 and .budget.source == "api"' <(status)
check "pass 1 logged the budget" jqt -s 'any(.event == "budget" and .watts == 650 and .source == "annotations")' "$tmp/pass1.jsonl"
want='{"flexwatt.io/gpu-cap-min-watts":"100","flexwatt.io/gpu-cap-max-watts":"400","flexwatt.io/gpu-cap-default-watts":"400","flexwatt.io/gpu-count":"2"}'
check "cap range published as labels ($(jq -c '.metadata.labels' "$tmp/node.json"))" \
  jqt --argjson w "$want" '.metadata.labels | contains($w) and .["kubernetes.io/hostname"] == "node-1"' "$tmp/node.json"
check "one merge-patch" test "$(patches)" -eq 1
run_sidecar pass2
check "pass 2 exits 0" test "$rc" -eq 0
check "unchanged node: no second PUT /v1/budget (puts=$(puts)) and no second patch" \
  test "$(puts)-$(patches)" = "1-1"

node '{"flexwatt.io/budget-watts":"lots"}' "$(jq -c '.metadata.labels' "$tmp/node.json")"
run_sidecar bad
check "a bad annotation: exit 1" test "$rc" -eq 1
check "the error names the key and value" grep -q 'flexwatt.io/budget-watts=.lots.' "$tmp/bad.jsonl"
check "nothing sent: budget still 650 W, $(puts) PUT" test "$(puts)-$(status | jq '.budget.watts')" = "1-650"

node '{}' "$(jq -c '.metadata.labels + {"flexwatt.io/budget-watts": "600"}' "$tmp/node.json")"
run_sidecar label
check "a label names the budget when no annotation does (rc=$rc)" test "$rc" -eq 0
check "600 W from the label reached the agent" wait_budget 600
check "logged as from labels" jqt -s 'any(.event == "budget" and .source == "labels")' "$tmp/label.jsonl"

echo wrong-token > "$tmp/bad-token"
run_sidecar denied "$tmp/bad-token"
check "a refused token: exit 1, error logged" \
  bash -c "[ $rc -eq 1 ] && grep -q 'HTTP 401' '$tmp/denied.jsonl'"
check "a refused token: budget unchanged (600 W)" test "$(status | jq '.budget.watts')" = 600

# The DaemonSet runs the sidecar as shipped.
python3 - "$src/deploy/kubernetes/flexwatt-agent.yaml" >"$tmp/ds.out" 2>&1 <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
fails = []
def need(ok, what):
    if not ok: fails.append(what)
ds = next(d for d in docs if d["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
side = [c for c in pod["containers"] if "node_budget.py" in " ".join(c.get("command", []))]
need(len(side) == 1, "one container runs node_budget.py")
if side:
    env = {e["name"]: e for e in side[0].get("env", [])}
    need(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
         "NODE_NAME from the downward API (spec.nodeName)")
    need(any(m["mountPath"] == "/run/flexwatt" for m in side[0].get("volumeMounts", [])),
         "the sidecar mounts /run/flexwatt (the agent's socket)")
    need(not side[0].get("securityContext", {}).get("privileged"), "the sidecar is not privileged")
sa = pod.get("serviceAccountName")
need(("ServiceAccount", sa) in by, "the pod's service account is shipped")
roles = [d for d in docs if d["kind"] == "ClusterRole"]
ok = any("nodes" in r.get("resources", []) and {"get", "patch"} <= set(r.get("verbs", []))
         for role in roles for r in role.get("rules", []))
need(ok, "a ClusterRole that may get and patch nodes")
need(any(d["kind"] == "ClusterRoleBinding" and any(s.get("name") == sa for s in d.get("subjects", []))
         for d in docs), "bound to the service account")
if fails: sys.exit("; ".join(fails))
PY
check "DaemonSet sidecar and RBAC: $(tr '\n' ' ' < "$tmp/ds.out")" test ! -s "$tmp/ds.out"
kill -TERM "$agent"; wait "$agent"; agent=
finish k8s_node_budget
