#!/usr/bin/env bash
# The deploy/ files as shipped, on a fresh node: the systemd unit (systemd-analyze verify; every
# path it makes writable exists before any Exec line runs, else 226/NAMESPACE; every path
# deploy/agent.yaml writes is writable; ExecStart, kill -9, ExecStopPost --restore run on the
# fake NVML library), the Kubernetes DaemonSet (parses; its agent.yaml loads; restore file, lock
# and socket on a hostPath; a restore init container; SIGTERM reaches the agent) and the Slurm
# prolog/epilog (sh -n, shellcheck; prolog, kill -9 or not, epilog on the fake NVML library).
# Needs systemd-analyze, shellcheck and python3-yaml (Makefile DEB_PACKAGES).
# Usage: deploy_units.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$(realpath "$1")
src=$2
fake=$(dirname "$bin")/tests/telemetry/fake_nvml/libnvidia-ml.so.1
source "$(dirname "$0")/lib/agent.sh"
unit=$src/deploy/systemd/flexwatt-agent.service
for tool in systemd-analyze shellcheck; do
  command -v $tool >/dev/null || { echo "FAIL: $tool missing (make deps installs it)"; exit 1; }
done
python3 -c 'import yaml' 2>/dev/null || { echo "FAIL: python3 yaml missing (make deps)"; exit 1; }
[ -f "$fake" ] || { echo "FAIL: fake NVML library not built at $fake"; exit 1; }
export FAKE_NVML_SCRIPT=$tmp/script.txt FAKE_NVML_STATE=$tmp/state.txt
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
power * 300
limits * min=100 max=400 default=400 enforced=400
SCRIPT
# running PID: the process runs (not a zombie: a zombie's cmdline is empty).
running() { [ -n "$(tr -d '\0' < "/proc/$1/cmdline" 2>/dev/null)" ]; }
caps() { { tr '\n' ' ' < "$tmp/state.txt"; } 2>/dev/null; }
# wait_caps WANT [LOG]: waits (<= 5 s) until the fake driver holds the caps WANT ("0 300 1 300 ");
# else prints the caps and LOG's last lines.
wait_caps() {
  for _ in $(seq 50); do [ "$(caps)" = "$1" ] && return 0; sleep 0.1; done
  echo "  caps '$(caps)', want '$1'${2:+; $(tail -3 "$2" 2>/dev/null | tr '\n' ' ')}"; return 1
}
# node_config FILE ROOT: deploy/agent.yaml on the fake driver, every absolute path under ROOT.
node_config() {
  sed -e "s#: /#: $2/#" -e "s#^backend: .*#backend: fake-nvml\nnvml_library: $fake#" \
    -e "s#tcp_port: .*#tcp_port: $port#" -e "s#^period_s: .*#period_s: 0.1#" -e /^loop_priority/d \
    "$src/deploy/agent.yaml" > "$1"
}

# --- systemd ---------------------------------------------------------------------------------
key() { sed -n "s/^$1=//p" "$unit"; }  # key NAME: the values of NAME= in the unit, one a line
mkdir -p "$tmp/unit"
sed "s#/usr/local/bin/flexwatt#$bin#g" "$unit" > "$tmp/unit/flexwatt-agent.service"
systemd-analyze verify "$tmp/unit/flexwatt-agent.service" >"$tmp/verify.out" 2>&1
rc=$?
check "systemd-analyze verify exits 0 ($(head -3 "$tmp/verify.out"))" test $rc -eq 0
check "systemd-analyze verify says nothing ($(head -3 "$tmp/verify.out"))" test ! -s "$tmp/verify.out"

# The directories systemd creates (and makes writable) before any Exec line runs.
created=()
for pair in RuntimeDirectory:/run StateDirectory:/var/lib LogsDirectory:/var/log \
            CacheDirectory:/var/cache ConfigurationDirectory:/etc; do
  for d in $(key "${pair%%:*}"); do
    created+=("${pair#*:}/$d")
    check "${pair%%:*}=$d has a mode" test -n "$(key "${pair%%:*}Mode")"
  done
done
# under PATH DIR...: PATH is one of DIRs or inside one.
under() {
  local p=$1 d; shift
  for d in "$@"; do case $p/ in "$d"/*) return 0 ;; esac; done
  return 1
}
# Every ReadWritePaths= entry (and ReadOnlyPaths=, InaccessiblePaths=) must exist: created by
# a *Directory= line, or marked optional with '-'. Otherwise every Exec line fails (226).
for p in $(key ReadWritePaths) $(key ReadOnlyPaths) $(key InaccessiblePaths); do
  case $p in -*) continue ;; esac
  check "writable path $p is created by a *Directory= line or marked '-'" under "$p" "${created[@]}"
done
check "no ExecStartPre mkdir (it runs inside the namespace that needs the directories)" \
  bash -c "! grep -q '^ExecStartPre=.*mkdir' '$unit'"
# ProtectSystem=strict: the agent writes only under a created directory (or a ReadWritePaths=).
writable=("${created[@]}")
for p in $(key ReadWritePaths); do writable+=("${p#-}"); done
agent_paths=$(python3 - "$src/deploy/agent.yaml" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
s = c.get("server", {})
for p in (c.get("restore_file"), c.get("lock_file"), s.get("unix_socket"), s.get("audit_log")):
    if p: print(p)
PY
)
trace_dir=$(sed -n 's/^# *trace_dir: *\([^ ]*\).*/\1/p; s/^trace_dir: *\([^ ]*\).*/\1/p' \
  "$src/deploy/agent.yaml")
check "agent.yaml names the restore file, lock, socket, audit log" \
  test "$(wc -w <<<"$agent_paths")" -eq 4
for p in $agent_paths $trace_dir; do
  check "agent.yaml's $p is writable under the unit's sandbox" under "$p" "${writable[@]}"
done
restore_file=$(head -1 <<<"$agent_paths")
if under "$restore_file" /run; then
  check "RuntimeDirectoryPreserve=yes keeps $restore_file across stops and restarts" \
    test "$(key RuntimeDirectoryPreserve)" = yes
fi
# --lock-wait-s: a dying agent's own restore process (runtime/fatal_restore.hpp) may hold the
# node lock for a moment; ExecStopPost waits for it rather than failing.
check "ExecStopPost= is ExecStart= with --restore --lock-wait-s" \
  test "$(key ExecStopPost)" = "$(key ExecStart) --restore --lock-wait-s 10"

# The unit's own command lines on the fake driver, paths moved under $tmp/node: ExecStart,
# kill -9 (caps left at 300 W), ExecStopPost (caps back to 400 W), ExecStopPost again.
root=$tmp/node
mkdir -p "$root/etc/flexwatt" "$root/run/flexwatt" "$root/var/log/flexwatt"
node_config "$root/etc/flexwatt/agent.yaml" "$root"
# The token file as docs/agent.md "Install" makes it (mode 0600).
(umask 077 && printf 'admin admin %s\n' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
  > "$root/etc/flexwatt/tokens")
exec_line() { key "$1" | sed -e "s#/usr/local/bin/flexwatt#$bin#" -e "s#/etc/#$root/etc/#g"; }
read -ra start <<<"$(exec_line ExecStart)"
read -ra stop_post <<<"$(exec_line ExecStopPost)"
"${start[@]}" >"$tmp/unit-start.out" 2>&1 &
track_agent $!
check "ExecStart caps both GPUs to 300 W" wait_caps "0 300 1 300 " "$tmp/unit-start.out"
kill -9 "$agent"; wait "$agent" 2>/dev/null
check "after kill -9 the restore file is left" test -s "$root/run/flexwatt/saved-limits.json"
timeout 10 "${stop_post[@]}" >"$tmp/stop-post.out" 2>&1
check "ExecStopPost exits 0 ($(cat "$tmp/stop-post.out"))" test $? -eq 0
check "ExecStopPost put back 400 W" test "$(caps)" = "0 400 1 400 "
check "ExecStopPost removed the restore file" test ! -e "$root/run/flexwatt/saved-limits.json"
timeout 10 "${stop_post[@]}" >"$tmp/stop-post2.out" 2>&1
check "ExecStopPost with nothing to restore exits 0 ($(cat "$tmp/stop-post2.out"))" test $? -eq 0
check "the audit log is where the unit's LogsDirectory is" test -e "$root/var/log/flexwatt/audit.log"

# --- Kubernetes ------------------------------------------------------------------------------
python3 - "$src/deploy/kubernetes/flexwatt-agent.yaml" "$tmp/k8s-agent.yaml" >"$tmp/k8s.out" 2>&1 <<'PY'
import os, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"]: d for d in docs}
fails = []
def need(ok, what):
    if not ok: fails.append(what)
cm, ds = kinds.get("ConfigMap"), kinds.get("DaemonSet")
need(cm and ds, "a ConfigMap and a DaemonSet")
if not (cm and ds): sys.exit("; ".join(fails))
text = cm["data"]["agent.yaml"]
open(sys.argv[2], "w").write(text)
cfg = yaml.safe_load(text)
pod = ds["spec"]["template"]["spec"]
vols = {v["name"]: v for v in pod.get("volumes", [])}
def host_mounts(c):  # mountPath -> hostPath of the container's hostPath mounts
    return {m["mountPath"]: vols[m["name"]]["hostPath"]["path"]
            for m in c.get("volumeMounts", []) if "hostPath" in vols.get(m["name"], {})}
def on_host(c, path):  # the path is inside a hostPath mount at the same place on the host
    return any((path + "/").startswith(mp.rstrip("/") + "/") and mp == hp
               for mp, hp in host_mounts(c).items())
agent = [c for c in pod["containers"] if c["name"] == "agent"]
need(len(agent) == 1, "one container 'agent'")
agent = agent[0]
config = agent["command"][agent["command"].index("--config") + 1]
inits = [c for c in pod.get("initContainers", []) if "--restore" in c.get("command", [])]
need(len(inits) == 1, "an init container running --restore")
srv = cfg.get("server", {})
state = [cfg.get("restore_file", "/run/flexwatt/saved-limits.json"),
         cfg.get("lock_file", "/run/flexwatt/agent.lock"),
         srv.get("unix_socket", "/run/flexwatt/agent.sock")]
for c in [agent] + inits:
    need(config in c["command"], c["name"] + " uses --config " + config)
    for p in state:
        need(on_host(c, p), c["name"] + ": " + p + " on a hostPath at the same path")
# SIGTERM (the kubelet's, or preStop's) reaches the agent as PID 1: it restores, then exits.
need(os.path.basename(agent["command"][0]) == "flexwatt", "the agent is PID 1 (exec form)")
pre = agent.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command")
need(pre is None or "kill -TERM 1" in " ".join(pre), "preStop, if any, sends SIGTERM to PID 1")
need(pod.get("terminationGracePeriodSeconds", 30) >= 20, "a grace period of >= 20 s")
probe = agent.get("livenessProbe", {}).get("httpGet", {})
need(probe.get("port") == srv.get("tcp_port"), "the liveness probe on the agent's tcp_port")
if fails: sys.exit("; ".join(fails))
PY
check "DaemonSet: $(tr '\n' ' ' < "$tmp/k8s.out")" test ! -s "$tmp/k8s.out"
if [ -s "$tmp/k8s-agent.yaml" ]; then
  mkdir -p "$tmp/k8s/run/flexwatt"  # the hostPath volume's DirectoryOrCreate
  sed -e "s#: /#: $tmp/k8s/#" -e "s#^backend: .*#backend: fake-nvml\nnvml_library: $fake#" \
    "$tmp/k8s-agent.yaml" > "$tmp/k8s-agent-local.yaml"
  "$bin" agent --config "$tmp/k8s-agent-local.yaml" --restore >"$tmp/k8s-restore.out" 2>&1
  check "the ConfigMap's agent.yaml loads (--restore: $(cat "$tmp/k8s-restore.out"))" test $? -eq 0
fi

# --- Slurm -----------------------------------------------------------------------------------
for s in prolog epilog; do
  check "$s.sh: sh -n" sh -n "$src/deploy/slurm/$s.sh"
  check "$s.sh: shellcheck ($(shellcheck "$src/deploy/slurm/$s.sh" | head -3 | tr '\n' ' '))" \
    shellcheck "$src/deploy/slurm/$s.sh"
  # Run against the fake node only when the script takes its directories from the environment
  # (else it would write the real /run/flexwatt); not doing so is a failure.
  check "$s.sh takes FLEXWATT_RUN_DIR" grep -q FLEXWATT_RUN_DIR "$src/deploy/slurm/$s.sh"
done
if grep -q FLEXWATT_RUN_DIR "$src/deploy/slurm/prolog.sh" &&
   grep -q FLEXWATT_RUN_DIR "$src/deploy/slurm/epilog.sh"; then
  sroot=$tmp/slurm
  rm -f "$tmp/state.txt"
  node_config "$tmp/slurm.yaml" "$sroot"
  sed -i '/token_file/d' "$tmp/slurm.yaml"
  export FLEXWATT=$bin FLEXWATT_CONFIG=$tmp/slurm.yaml FLEXWATT_RUN_DIR=$sroot/run/flexwatt \
    FLEXWATT_LOG_DIR=$sroot/var/log/flexwatt
  pidf=$FLEXWATT_RUN_DIR/agent.pid
  timeout 30 sh "$src/deploy/slurm/prolog.sh"
  check "prolog exits 0" test $? -eq 0
  [ -s "$pidf" ] && track_agent "$(cat "$pidf")"
  check "prolog started the agent: caps 300 W" wait_caps "0 300 1 300 " "$FLEXWATT_LOG_DIR/agent.log"
  first=$(cat "$pidf" 2>/dev/null)
  timeout 30 sh "$src/deploy/slurm/prolog.sh"
  check "a second job's prolog leaves the running agent (pid file $first)" \
    test "$(cat "$pidf" 2>/dev/null)" = "$first"
  timeout 30 sh "$src/deploy/slurm/epilog.sh"
  check "epilog exits 0" test $? -eq 0
  check "epilog stopped the agent" bash -c "$(declare -f running); ! running $first"
  check "epilog: SIGTERM restored 400 W" test "$(caps)" = "0 400 1 400 "
  check "epilog removed the pid file" test ! -e "$pidf"
  timeout 30 sh "$src/deploy/slurm/prolog.sh"
  [ -s "$pidf" ] && track_agent "$(cat "$pidf")"
  check "prolog again: caps 300 W" wait_caps "0 300 1 300 "
  kill -9 "$(cat "$pidf")"; sleep 0.2
  timeout 30 sh "$src/deploy/slurm/epilog.sh"
  check "epilog after kill -9: --restore put back 400 W" test "$(caps)" = "0 400 1 400 "
  check "epilog after kill -9: no restore file" test ! -e "$FLEXWATT_RUN_DIR/saved-limits.json"
fi
finish deploy_units
