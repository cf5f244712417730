#!/usr/bin/env python3
"""Include-order guard, by folder: one folder under src/ is one module (the library fw_<folder>;
no nested source folders), declared in CMakeLists.txt as flexwatt_module(NAME DEPS...). A file
under src/<module>/ may include headers of <module> itself and of the modules it links to,
directly or through them. An include that runs up the order (or sideways into a module not
declared below) fails, naming the file, the line and the module order; so does a folder with
no flexwatt_module line, a nested folder holding sources, a declared module with no folder, or
a module line above a module it links to (the lines are the layer order).
vocab/ and core/ include no other module. cli/ (the binary) may include any module.

The daemon's side reaches the simulator through one door: under src/runtime/ and src/agent/,
only runtime/sim_node_plant.cpp (the simulator's real-time adapter) includes sim/ (the rest sees
it as a NodePlant), although runtime/ links to it.

Usage: check_layers.py SOURCE_DIR   (exit 1 on any violation; run by `make test`)
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
cmake = (root / "CMakeLists.txt").read_text()
deps = {}
for m in re.finditer(r"^flexwatt_module\(([\w/]+)([^)]*)\)", cmake, re.M):
    deps[m.group(1)] = [d[3:] for d in m.group(2).split() if d.startswith("fw_")]
bad = 0
# The module lines are in layer order: a module links only to modules declared above it.
order = list(deps)
for i, mod in enumerate(order):
    for d in deps[mod]:
        if d not in order[:i]:
            print(f"CMakeLists.txt: flexwatt_module({mod}) links fw_{d}, declared below it (the "
                  f"lines are the layer order)")
            bad += 1
# The folder tree and the declared modules must be the same set.
folders = {d.name for d in (root / "src").iterdir() if d.is_dir()} - {"cli"}
for mod in sorted(deps):
    if "/" in mod or mod not in folders:
        print(f"CMakeLists.txt: flexwatt_module({mod}) is not a folder directly under src/")
        bad += 1
for name in sorted(folders - set(deps)):
    print(f"src/{name}/: a folder with no flexwatt_module({name}) line in CMakeLists.txt")
    bad += 1
for d in sorted((root / "src").glob("*/*/")):
    if d.is_dir() and any(d.rglob("*.[ch]pp")):
        print(f"{d.relative_to(root)}/: a nested source folder (one folder = one library: move it "
              f"to src/{d.name}/ with its own flexwatt_module line)")
        bad += 1


def closure(mod, seen=None):
    seen = set() if seen is None else seen
    for d in deps.get(mod, []):
        if d not in seen:
            seen.add(d)
            closure(d, seen)
    return seen


include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[\w.]+"')
for mod in sorted(deps):
    allowed = closure(mod) | {mod}
    for f in sorted((root / "src" / mod).glob("*.[ch]pp")):
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = include.match(line)
            if not m or m.group(1) == mod:
                continue
            target = m.group(1)
            if target not in deps and target != "cli":
                continue  # not a module (a generated header's folder, e.g. core/version.hpp)
            if target not in allowed:
                print(f"{f.relative_to(root)}:{n}: includes {target}/, which {mod}/ does not "
                      f"build on (it links to: {', '.join(sorted(allowed - {mod})) or 'nothing'})")
                bad += 1
# The one door into sim/ from the daemon's side (see the docstring).
sim_door = "src/runtime/sim_node_plant.cpp"
for mod in ("runtime", "agent"):
    for f in sorted((root / "src" / mod).glob("*.[ch]pp")):
        rel = f.relative_to(root).as_posix()
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = include.match(line)
            if m and m.group(1) == "sim" and rel != sim_door:
                print(f"{rel}:{n}: includes sim/; only {sim_door} (the simulator's real-time "
                      f"adapter) may")
                bad += 1
print(f"check_layers: {len(deps)} modules, {bad} include(s) against the order")
sys.exit(1 if bad else 0)
