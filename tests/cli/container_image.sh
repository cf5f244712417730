#!/usr/bin/env bash
# deploy/container/Containerfile without a container engine (none here: no image is built). The
# file is parsed and checked, and its build stage replayed outside a container as far as that
# goes:
#  - every stage FROM debian:12 / bookworm (-slim); the final stage's ENTRYPOINT, exec form, is
#    /opt/flexwatt/bin/flexwatt agent (the DaemonSet's command), CMD --config
#    /etc/flexwatt/agent.yaml; the final stage installs python3 (the DaemonSet's budget sidecar);
#  - no NVML in the image: no apt package or copied file named nvidia/cuda/libnvidia-ml;
#  - it builds with the project's make: `make deps` and `make dist` (or build) with
#    DEB_PACKAGES from its BUILD_PACKAGES, each a package of the Makefile's DEB_PACKAGES; every
#    COPY source exists; the COPY set, copied to a scratch /src as the stage lays it out, is
#    enough for `make -n` of those targets and for CMake to configure with the RUN's CMAKE_FLAGS;
#  - the tarball it unpacks into /opt/flexwatt, made by the COPY set's deploy/dist.sh from the
#    built binary, has bin/flexwatt (runs: --version) and every /opt/flexwatt path the
#    DaemonSet's commands name, and no NVML library.
# Under CI=true a missing python3, cmake or make fails the test.
# Usage: container_image.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=lib/common.sh
source "$(dirname "$0")/lib/common.sh"
tmp=
scratch_dir tmp
py=
for c in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null && "$c" -c 'import yaml' 2>/dev/null; then py=$c; break; fi
done
[ -n "$py" ] || need_tool "python3 with PyYAML (Debian package python3-yaml)"
for t in cmake make tar; do command -v "$t" >/dev/null || need_tool "$t"; done

"$py" - "$src" "$bin" "$tmp" >"$tmp/checks.out" 2>&1 <<'PY'
import glob, json, os, re, shlex, shutil, subprocess, sys, tarfile, yaml
src, binary, tmp = sys.argv[1:4]
cf_path = os.path.join(src, "deploy", "container", "Containerfile")
fails = []
def need(ok, what):
    if not ok:
        fails.append(what)
def done():
    for f in fails:
        print("FAIL: " + f)
    sys.exit(0)

# Instructions: comments dropped, backslash continuations joined.
instr, cur = [], ""
for line in open(cf_path).read().splitlines():
    if not cur and (not line.strip() or line.lstrip().startswith("#")):
        continue
    if line.rstrip().endswith("\\"):
        cur += line.rstrip()[:-1] + " "
        continue
    cur += line
    word, _, rest = cur.strip().partition(" ")
    instr.append((word.upper(), rest.strip()))
    cur = ""
stages = []
for word, rest in instr:
    if word == "FROM":
        stages.append({"from": rest.split()[0], "i": []})
    elif stages:
        stages[-1]["i"].append((word, rest))
    else:
        need(word == "ARG", f"{word} before the first FROM")
need(len(stages) >= 1, "at least one FROM")
if not stages:
    done()
for s in stages:
    need(re.fullmatch(r"(docker\.io/(library/)?)?debian:(12|bookworm)(-slim)?", s["from"]),
         f"FROM {s['from']}: not Debian 12 (debian:12, debian:bookworm, -slim)")
final = stages[-1]
def last(stage, word):
    vals = [r for w, r in stage["i"] if w == word]
    return vals[-1] if vals else None
def exec_form(text, word):
    try:
        v = json.loads(text or "")
    except ValueError:
        v = None
    need(isinstance(v, list) and all(isinstance(x, str) for x in v), f"{word} in exec form (JSON): {text}")
    return v if isinstance(v, list) else []
entry = exec_form(last(final, "ENTRYPOINT"), "ENTRYPOINT")
need(entry == ["/opt/flexwatt/bin/flexwatt", "agent"], f"ENTRYPOINT {entry}, want /opt/flexwatt/bin/flexwatt agent")
cmd = exec_form(last(final, "CMD"), "CMD")
need(cmd == ["--config", "/etc/flexwatt/agent.yaml"], f"CMD {cmd}")

def installs(stage):  # the packages apt-get install names in the stage's RUNs
    pk = []
    for w, r in stage["i"]:
        if w == "RUN":
            for seg in re.split(r"&&|;|\|\|", r):
                words = shlex.split(seg.replace("$", "\\$"))
                if "apt-get" in words and "install" in words:
                    pk += [x for x in words[words.index("install") + 1:] if not x.startswith("-")]
    return pk
need("python3" in installs(final), f"the final stage installs python3 (the budget sidecar): {installs(final)}")
args = {}
for s in stages:
    for w, r in s["i"]:
        if w == "ARG" and "=" in r:
            k, v = r.split("=", 1)
            args[k] = shlex.split(v)[0] if v.strip() else ""
for s in stages:
    for p in installs(s) + [r for w, r in s["i"] if w in ("COPY", "ADD")] + list(args.values()):
        need(not re.search(r"nvidia|cuda", p, re.I), f"NVML/CUDA in the image: {p}")

# The build stage: make deps and make dist|build, as RUN gives them.
build = next((s for s in stages if any(w == "RUN" and re.search(r"\bmake\b", r) for w, r in s["i"])), None)
need(build is not None, "a stage builds with make")
if build is None:
    done()
makes = []
for w, r in build["i"]:
    if w != "RUN":
        continue
    for seg in re.split(r"&&|;", r):
        words = shlex.split(seg)
        if words and words[0] == "make":
            sub = lambda x: re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), x)
            makes.append([sub(x) for x in words[1:]])
targets = [t for m in makes for t in m if "=" not in t and not t.startswith("-")]
need("deps" in targets, f"make deps (targets: {targets})")
need("dist" in targets or "build" in targets, f"make dist or make build (targets: {targets})")
need("/opt/flexwatt/bin/flexwatt" in " ".join(r for w, r in build["i"] if w == "RUN") or "dist" in targets,
     "the build stage installs /opt/flexwatt")
deb = subprocess.run(["make", "-s", "--no-print-directory", "-C", src, "--eval",
                      "fw-print-deb-packages: ; @echo $(DEB_PACKAGES)", "fw-print-deb-packages"],
                     capture_output=True, text=True).stdout.split()
need(len(deb) > 5, f"the Makefile's DEB_PACKAGES ({deb})")
for m in makes:
    for v in m:
        if v.startswith("DEB_PACKAGES="):
            pk = v.split("=", 1)[1].split()
            need(pk, "DEB_PACKAGES= names packages")
            for p in pk:
                need(p in deb, f"DEB_PACKAGES={p}: not a package of the Makefile's DEB_PACKAGES")

# Replay: the COPY set laid out as WORKDIR /src holds it, then make -n and a CMake configure.
stage = os.path.join(tmp, "src")
os.makedirs(stage)
workdir = "/"
for w, r in build["i"]:
    if w == "WORKDIR":
        workdir = r
    if w != "COPY":
        continue
    parts = shlex.split(r)
    need(not any(p.startswith("--from") for p in parts), f"COPY --from in the build stage: {r}")
    *srcs, dest = parts
    dest_abs = dest if dest.startswith("/") else os.path.join(workdir, dest)
    need(dest_abs.startswith("/src"), f"COPY to {dest_abs}: the replay expects WORKDIR /src")
    for s_ in srcs:
        path = os.path.join(src, s_)
        need(os.path.exists(path), f"COPY {s_}: not in the repository")
        if not os.path.exists(path):
            continue
        to = os.path.join(stage, os.path.relpath(dest_abs, "/src"))
        if os.path.isdir(path):
            shutil.copytree(path, to, dirs_exist_ok=True)
        else:
            os.makedirs(to if dest.endswith("/") else os.path.dirname(to), exist_ok=True)
            shutil.copy(path, os.path.join(to, os.path.basename(s_)) if dest.endswith("/") else to)
need(workdir == "/src", f"WORKDIR {workdir}")
cmake_flags = []
for m in makes:
    vars_ = [v if not v.startswith("BUILD=") else "BUILD=" + os.path.join(tmp, "build") for v in m]
    r = subprocess.run(["make", "-n", "-C", stage] + vars_, capture_output=True, text=True)
    need(r.returncode == 0, f"make -n {' '.join(m)} in the COPY set: {r.stderr.strip()[-300:]}")
    cmake_flags += [v.split("=", 1)[1] for v in m if v.startswith("CMAKE_FLAGS=")]
need(any("-DFLEXWATT_BUILD_TESTS=OFF" in f for f in cmake_flags), f"CMAKE_FLAGS without the tests: {cmake_flags}")
r = subprocess.run(["cmake", "-S", stage, "-B", os.path.join(tmp, "cfg"), "-DCMAKE_BUILD_TYPE=Release"]
                   + " ".join(cmake_flags).split(), capture_output=True, text=True)
need(r.returncode == 0, f"CMake configures the COPY set with {cmake_flags}: {(r.stdout + r.stderr).strip()[-400:]}")
if r.returncode == 0:
    cache = open(os.path.join(tmp, "cfg", "CMakeCache.txt")).read()
    need("FLEXWATT_BUILD_TESTS:BOOL=OFF" in cache, "the configured COPY set builds no tests")

# The tarball /opt/flexwatt is: the COPY set's deploy/dist.sh (it packs the COPY set's deploy/,
# scenarios/ and docs) on the built binary, unpacked as the RUN does.
r = subprocess.run(["bash", os.path.join(stage, "deploy", "dist.sh"), os.path.dirname(binary),
                    os.path.join(tmp, "dist")], capture_output=True, text=True)
need(r.returncode == 0, f"deploy/dist.sh: {r.stderr.strip()[-300:]}")
tars = glob.glob(os.path.join(tmp, "dist", "flexwatt-*.tar.gz"))
need(len(tars) == 1, f"one tarball dist/flexwatt-*.tar.gz ({tars})")
if tars:
    opt = os.path.join(tmp, "opt", "flexwatt")
    os.makedirs(opt)
    subprocess.run(["tar", "-xzf", tars[0], "--strip-components=1", "-C", opt], check=True)
    r = subprocess.run([os.path.join(opt, "bin", "flexwatt"), "--version"], capture_output=True, text=True)
    need(r.returncode == 0 and r.stdout.startswith("flexwatt "), f"bin/flexwatt --version: {r.stdout}{r.stderr}")
    libs = os.listdir(os.path.join(opt, "lib"))
    need(not any("nvidia" in x for x in libs), f"no NVML in lib/: {libs}")
    ds = [d for d in yaml.safe_load_all(open(os.path.join(src, "deploy", "kubernetes", "flexwatt-agent.yaml")))
          if d and d.get("kind") == "DaemonSet"]
    pod = ds[0]["spec"]["template"]["spec"] if ds else {}
    paths = {w for c in pod.get("initContainers", []) + pod.get("containers", [])
             for w in c.get("command", []) if w.startswith("/opt/flexwatt/")}
    need(len(paths) >= 2, f"the DaemonSet's commands name /opt/flexwatt paths ({paths})")
    for p in sorted(paths):
        need(os.path.exists(os.path.join(opt, os.path.relpath(p, "/opt/flexwatt"))), f"{p} is not in the image's /opt/flexwatt")
    agent = [c for c in pod.get("containers", []) if c.get("name") == "agent"]
    need(agent and agent[0]["command"][:2] == entry, f"the DaemonSet's agent runs the ENTRYPOINT ({entry})")
done()
PY
rc=$?
cat "$tmp/checks.out"
check "the Containerfile checks ran (exit $rc)" test $rc -eq 0
check "the Containerfile passes every check" test "$(grep -c '^FAIL' "$tmp/checks.out")" -eq 0
finish container_image
