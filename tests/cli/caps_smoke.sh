#!/usr/bin/env bash
# `flexwatt caps` and `flexwatt train --task caps`: a short comparison with a shipped capnet
# policy (JSON fields, the SVG), a two-iteration training whose policy loads in eval, and bad
# input with exit code 2.
# Usage: bash caps_smoke.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
scn="$src/scenarios/caps-pipeline-imbalance-a100x8.yaml"
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
quiet() { "$@" >/dev/null; }
check "caps runs" "$bin" caps "$scn" --seeds 1 --quick --set duration_s=120 \
  --policies "$src/policies/capnet-a100-alpha0.3.json" --svg "$tmp/p.svg" --json >"$tmp/c.json"
check "uncapped is the reference" jqt '.arms[0].name == "uncapped" and .arms[0].energy_saved == 0' "$tmp/c.json"
check "every family" jqt '[.arms[].family] | unique == ["capnet","per-gpu","pid","uncapped","uniform","zeus"]' "$tmp/c.json"
check "capnet margins" jqt '.arms[-1] | has("margin_vs_uniform") and has("edp_change") and (.per_gpu_frontier_at_loss > 0)' "$tmp/c.json"
check "svg written" grep -q "<svg" "$tmp/p.svg"
check "train --task caps" quiet "$bin" train --task caps "$scn" --alpha 0.5 --iterations 2 --pairs 2 \
  --variants 1 --episode-s 60 --max-gpus 2 --validate-every 1 --out "$tmp/cap.json"
check "trained policy loads" quiet "$bin" eval "$scn" --controllers "capnet:$tmp/cap.json" --seeds 1 \
  --duration-s 60
check "alpha recorded" jqt '.metadata.alpha == 0.5 and .metadata.task == "caps"' "$tmp/cap.json"
expect_exit2 "bad alpha" "alpha" train --task caps "$scn" --alpha -1 --out "$tmp/x.json"
expect_exit2 "bad task" "task" train --task knobs "$scn" --out "$tmp/x.json"
expect_exit2 "missing scenario" "nope.yaml" caps nope.yaml
expect_exit2 "ppo policy as capnet" "cap_step|observation entry" eval "$scn" \
  --controllers "capnet:$src/policies/grpo-7b-a100.json" --seeds 1
finish caps_smoke
