#!/usr/bin/env bash
# The include-order guard (scripts/check_layers.py): the tree passes; a synthetic tree with an
# include that runs up the order (core/ including agent/) fails, naming the file and line; one
# folder = one library: a nested source folder or a folder with no module line fails.
# Usage: layering.sh FLEXWATT_BIN SOURCE_DIR
set -u
src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
check "the source tree keeps the module order" python3 "$src/scripts/check_layers.py" "$src"
mkdir -p "$tmp/src/core" "$tmp/src/agent"
printf 'flexwatt_module(core fmt::fmt)\nflexwatt_module(agent fw_core)\n' > "$tmp/CMakeLists.txt"
printf '#include "core/status.hpp"\n' > "$tmp/src/agent/a.cpp"
printf '#include <vector>\n#include "agent/a.hpp"\n' > "$tmp/src/core/c.cpp"
out=$(python3 "$src/scripts/check_layers.py" "$tmp"); rc=$?
check "an upward include fails (rc=$rc)" test "$rc" -eq 1
check "and names the file and line" grep -q "src/core/c.cpp:2: includes agent/" <<< "$out"
rm "$tmp/src/core/c.cpp"
mkdir -p "$tmp/src/agent/sub"
printf '#include "core/status.hpp"\n' > "$tmp/src/agent/sub/n.cpp"
out=$(python3 "$src/scripts/check_layers.py" "$tmp"); rc=$?
check "a nested source folder fails (rc=$rc)" test "$rc" -eq 1
check "and is named" grep -q "src/agent/sub/: a nested source folder" <<< "$out"
rm -r "$tmp/src/agent/sub"
mkdir -p "$tmp/src/extra"
out=$(python3 "$src/scripts/check_layers.py" "$tmp"); rc=$?
check "a folder with no module line fails (rc=$rc)" test "$rc" -eq 1
check "and is named" grep -q "src/extra/: a folder with no flexwatt_module" <<< "$out"
rm -r "$tmp/src/extra" "$tmp/src/agent"
# runtime/ links to sim/, yet only the simulator's adapter includes it.
mkdir -p "$tmp/src/sim" "$tmp/src/runtime"
printf 'flexwatt_module(core fmt::fmt)\nflexwatt_module(sim fw_core)\nflexwatt_module(runtime fw_sim)\n' \
  > "$tmp/CMakeLists.txt"
printf '#include "sim/scenario.hpp"\n' > "$tmp/src/runtime/sim_node_plant.cpp"
out=$(python3 "$src/scripts/check_layers.py" "$tmp"); rc=$?
check "the simulator's adapter may include sim/ (rc=$rc)" test "$rc" -eq 0
printf '#include "core/status.hpp"\n#include "sim/scenario.hpp"\n' > "$tmp/src/runtime/node_plant.cpp"
out=$(python3 "$src/scripts/check_layers.py" "$tmp"); rc=$?
check "another runtime/ file may not (rc=$rc)" test "$rc" -eq 1
check "and is named" grep -q "src/runtime/node_plant.cpp:2: includes sim/" <<< "$out"
finish layering
