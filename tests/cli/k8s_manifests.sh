#!/usr/bin/env bash
# Every Kubernetes file under deploy/kubernetes/, parsed (PyYAML) and checked as a GPU Operator
# node needs it (issue #47 item 4):
#  - every manifest has apiVersion, kind and metadata.name, and a namespaced one lives in a
#    Namespace the files create;
#  - the DaemonSet runs the image deploy/container/Containerfile builds, named
#    flexwatt-agent:VERSION (CMakeLists.txt's project version; never :latest), the tag the
#    Containerfile's and docs/agent.md's build commands give; its selector matches its pods;
#  - NVML from the NVIDIA Container Toolkit: runtimeClassName nvidia, and each container that
#    runs flexwatt has NVIDIA_VISIBLE_DEVICES=all and NVIDIA_DRIVER_CAPABILITIES with utility;
#    the nvidia.com/gpu taint tolerated; no hostPath of an NVML library file;
#  - patches/driver-root.yaml (the variant without the runtime class), merged into the
#    DaemonSet as `kubectl patch` does (strategic merge: containers and env by name, mounts by
#    mountPath, null deletes): the runtime class gone, the GPU Operator's driver root
#    /run/nvidia/driver mounted (HostToContainer) at the same path in every flexwatt container,
#    FLEXWATT_NVML_LIBRARY a libnvidia-ml.so.1 under it; and that mechanism run: the ConfigMap's
#    agent.yaml as shipped (paths moved to a scratch root), backend nvml, with
#    FLEXWATT_NVML_LIBRARY pointing into a scratch driver root holding the fake NVML library:
#    the agent starts and lists the fake GPUs' UUIDs.
# Under CI=true a missing PyYAML fails the test.
# Usage: k8s_manifests.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=lib/agent.sh
source "$(dirname "$0")/lib/agent.sh"
tmp=${tmp:?}
py=
for c in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null && "$c" -c 'import yaml' 2>/dev/null; then py=$c; break; fi
done
[ -n "$py" ] || need_tool "python3 with PyYAML (Debian package python3-yaml)"
command -v jq >/dev/null || need_tool jq
use_fake_nvml

# Prints one "FAIL: ..." line per failed check; writes the ConfigMap's agent.yaml to $2 and the
# patched agent container's FLEXWATT_NVML_LIBRARY to $3.
"$py" - "$src" "$tmp/agent.yaml" "$tmp/nvml-path" >"$tmp/checks.out" 2>&1 <<'PY'
import copy, glob, os, re, sys, yaml
src, agent_yaml_out, nvml_path_out = sys.argv[1:4]
kdir = os.path.join(src, "deploy", "kubernetes")
fails = []
def need(ok, what):
    if not ok:
        fails.append(what)
version = re.search(r"project\(flexwatt VERSION ([0-9.]+)", open(os.path.join(src, "CMakeLists.txt")).read()).group(1)
image = "flexwatt-agent:" + version

files = sorted(glob.glob(os.path.join(kdir, "**", "*.y*ml"), recursive=True))
manifests, patches = [], []
for f in files:
    rel = os.path.relpath(f, kdir)
    try:
        docs = [d for d in yaml.safe_load_all(open(f)) if d is not None]
    except yaml.YAMLError as e:
        need(False, f"{rel} does not parse: {e}")
        continue
    need(docs, f"{rel}: no document")
    (patches if rel.startswith("patches" + os.sep) else manifests).extend((rel, d) for d in docs)
need(len(manifests) >= 6, f"manifests found: {len(manifests)} documents")

CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "RuntimeClass", "PriorityClass"}
namespaces = {d.get("metadata", {}).get("name") for _, d in manifests if d.get("kind") == "Namespace"}
for rel, d in manifests:
    name = (d.get("metadata") or {}).get("name")
    need(d.get("apiVersion") and d.get("kind") and name, f"{rel}: a document without apiVersion, kind or metadata.name")
    if d.get("kind") not in CLUSTER_SCOPED:
        ns = d.get("metadata", {}).get("namespace")
        need(ns in namespaces, f"{rel}: {d.get('kind')} {name} in namespace {ns!r}, which no file creates")

dss = [d for _, d in manifests if d.get("kind") == "DaemonSet"]
need(len(dss) == 1, f"one DaemonSet ({len(dss)})")
if not dss:
    sys.exit("\n".join("FAIL: " + f for f in fails))
ds = dss[0]
pod = ds["spec"]["template"]["spec"]
sel = ds["spec"]["selector"]["matchLabels"]
labels = ds["spec"]["template"]["metadata"].get("labels", {})
need(all(labels.get(k) == v for k, v in sel.items()), "the selector matches the pod template's labels")

def containers(p):
    return p.get("initContainers", []) + p.get("containers", [])
def runs_flexwatt(c):
    return (c.get("command") or [""])[0].endswith("/bin/flexwatt")
def env(c):
    return {e["name"]: e.get("value") for e in c.get("env", [])}

for c in containers(pod):
    need(re.fullmatch(r"([^/]+/)*" + re.escape(image), c.get("image", "")),
         f"container {c['name']}: image {c.get('image')!r}, want {image} (deploy/container/Containerfile)")
for path, what in ((os.path.join(src, "deploy", "container", "Containerfile"), "Containerfile"),
                   (os.path.join(src, "docs", "agent.md"), "docs/agent.md")):
    text = open(path).read() if os.path.exists(path) else ""
    need(re.search(r"build -f deploy/container/Containerfile -t " + re.escape(image) + r" \.", text),
         f"{what} builds the DaemonSet's image ({image}) with -f deploy/container/Containerfile")

need(pod.get("runtimeClassName") == "nvidia", f"runtimeClassName nvidia ({pod.get('runtimeClassName')!r})")
fw = [c for c in containers(pod) if runs_flexwatt(c)]
need(len(fw) >= 2, f"the agent and its restore init container run flexwatt ({[c['name'] for c in fw]})")
for c in fw:
    e = env(c)
    need(e.get("NVIDIA_VISIBLE_DEVICES") == "all", f"{c['name']}: NVIDIA_VISIBLE_DEVICES=all ({e.get('NVIDIA_VISIBLE_DEVICES')!r})")
    caps = (e.get("NVIDIA_DRIVER_CAPABILITIES") or "").split(",")
    need("utility" in caps or "all" in caps, f"{c['name']}: NVIDIA_DRIVER_CAPABILITIES with utility ({caps})")
    need("FLEXWATT_NVML_LIBRARY" not in e, f"{c['name']}: no FLEXWATT_NVML_LIBRARY (the toolkit injects NVML)")
tol = pod.get("tolerations") or []
need(any(t.get("key") == "nvidia.com/gpu" and t.get("operator") == "Exists" and t.get("effect") in (None, "NoSchedule")
         for t in tol), f"tolerates nvidia.com/gpu (Exists, NoSchedule): {tol}")
for v in pod.get("volumes", []):
    hp = v.get("hostPath", {}).get("path", "")
    need("libnvidia-ml" not in hp, f"volume {v['name']}: a hostPath of an NVML file ({hp})")
cms = [d for _, d in manifests if d.get("kind") == "ConfigMap"]
if cms and "agent.yaml" in cms[0].get("data", {}):
    open(agent_yaml_out, "w").write(cms[0]["data"]["agent.yaml"])
    need(yaml.safe_load(cms[0]["data"]["agent.yaml"]).get("backend") == "nvml", "the ConfigMap's backend is nvml")
else:
    need(False, "a ConfigMap with agent.yaml")

# The driver-root patch, merged as kubectl's strategic merge patch does for these fields.
KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
        "volumeMounts": "mountPath"}
def smp(base, patch):
    if not isinstance(patch, dict) or not isinstance(base, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(base)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif k in KEYS and isinstance(v, list):
            items = out.get(k, [])
            for pv in v:
                hit = [i for i, x in enumerate(items) if x.get(KEYS[k]) == pv.get(KEYS[k])]
                if hit:
                    items[hit[0]] = smp(items[hit[0]], pv)
                else:
                    items.append(copy.deepcopy(pv))
            out[k] = items
        else:
            out[k] = smp(out.get(k), v)
    return out
root = [d for rel, d in patches if rel == os.path.join("patches", "driver-root.yaml")]
need(len(root) == 1, "patches/driver-root.yaml: one document")
if root:
    p = root[0]
    ppod = p.get("spec", {}).get("template", {}).get("spec", {})
    for c in containers(ppod):
        need(any(x["name"] == c["name"] for x in containers(pod)),
             f"driver-root patch: container {c['name']} is not in the DaemonSet (the patch would add it)")
    need("runtimeClassName" in ppod and ppod["runtimeClassName"] is None, "driver-root patch deletes runtimeClassName")
    merged = smp(ds, p)["spec"]["template"]["spec"]
    need("runtimeClassName" not in merged, "patched: no runtime class")
    vols = {v["name"]: v for v in merged.get("volumes", [])}
    need(any(v.get("hostPath", {}).get("path") == "/run/nvidia/driver" for v in vols.values()),
         "patched: a hostPath volume of /run/nvidia/driver (the GPU Operator's driver root)")
    for c in [c for c in containers(merged) if runs_flexwatt(c)]:
        lib = env(c).get("FLEXWATT_NVML_LIBRARY") or ""
        mounts = [m for m in c.get("volumeMounts", []) if "hostPath" in vols.get(m["name"], {})]
        under = [m for m in mounts if lib.startswith(m["mountPath"].rstrip("/") + "/")]
        need(os.path.basename(lib) == "libnvidia-ml.so.1", f"patched {c['name']}: FLEXWATT_NVML_LIBRARY={lib!r}")
        need(under and vols[under[0]["name"]]["hostPath"]["path"] == "/run/nvidia/driver"
             and under[0].get("mountPropagation") == "HostToContainer" and under[0].get("readOnly"),
             f"patched {c['name']}: {lib!r} under the driver root, mounted read-only, HostToContainer")
        need(c.get("securityContext", {}).get("privileged"), f"patched {c['name']}: privileged (the GPUs' device files)")
        need(env(c).get("NVIDIA_VISIBLE_DEVICES") == "all", f"patched {c['name']}: keeps its env")
        if c["name"] == "agent":
            open(nvml_path_out, "w").write(lib)
for f in fails:
    print("FAIL: " + f)
PY
rc=$?
cat "$tmp/checks.out"
check "the manifest checks ran (exit $rc)" test $rc -eq 0
check "the manifests pass every check" test "$(grep -c '^FAIL' "$tmp/checks.out")" -eq 0

# The patch's mechanism: the ConfigMap's agent.yaml, backend nvml, NVML found only through
# FLEXWATT_NVML_LIBRARY at the patch's path inside a scratch driver root (the fake library).
lib=$(cat "$tmp/nvml-path" 2>/dev/null)
if [ -n "$lib" ] && [ -s "$tmp/agent.yaml" ]; then
  droot=$tmp/host
  mkdir -p "$droot$(dirname "$lib")" "$tmp/k8s/run/flexwatt"
  cp "$fake" "$droot$lib"
  printf 'gpus 2\npower * 300\nlimits * min=100 max=400 default=400 enforced=400\n' > "$tmp/script.txt"
  sed -e "s#: /#: $tmp/k8s/#" -e "s#tcp_port: .*#tcp_port: $port#" "$tmp/agent.yaml" > "$tmp/agent-local.yaml"
  check "the ConfigMap's backend stays nvml" grep -q '^backend: nvml' "$tmp/agent-local.yaml"
  FLEXWATT_NVML_LIBRARY=$droot$lib "$bin" agent --config "$tmp/agent-local.yaml" \
    >"$tmp/agent.out" 2>"$tmp/agent.err" &
  track_agent $!
  check "the agent starts on NVML from the driver root ($droot$lib)" wait_healthz
  uuids=$(curl -s --max-time 2 "http://127.0.0.1:$port/v1/status" | jq -r '[.gpus[].uuid] | join(" ")')
  check "it lists the driver's GPUs ($uuids)" \
    test "$uuids" = "GPU-fa4e0000-0000-4000-8000-000000000000 GPU-fa4e0000-0000-4000-8000-000000000001"
  explain_process agent "$agent" "$tmp/agent.err"
  kill -TERM "$agent"; wait "$agent"; rc=$?; agent=
  check "the agent exits 0 on SIGTERM ($rc)" test $rc -eq 0
else
  check "the checks gave the patched NVML path and the ConfigMap's agent.yaml" false
fi
finish k8s_manifests
