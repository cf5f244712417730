#!/usr/bin/env bash
# `flexwatt caps` and `flexwatt train --task caps`: a short comparison with a shipped capnet
# policy (JSON fields, the SVG), a pipeline job with the frontier, capnet online and EnvPipe-like arms, a two-iteration training
# whose policy loads in eval, and bad input with exit code 2.
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
pp="$src/scenarios/caps-pp4-a100pcie-x8-straggler.yaml"
check "caps on a pipeline job" "$bin" caps "$pp" --seeds 1 --quick --set duration_s=300 \
  --set 'jobs.0.stragglers=[{pipeline: 1, factor: 1.2, start_s: 100, end_s: 200}]' --json >"$tmp/pp.json"
check "pipeline: two frontier arms (constant caps, the per-phase schedule) that save energy" jqt '[.arms[] | select(.family == "frontier")] |
  (map(.name) == ["frontier", "frontier:schedule"]) and all(.energy_saved > 0)' "$tmp/pp.json"
check "pipeline: the plan held to capnet online's loss rule (saves, loses no more than frontier)" jqt '
  [.arms[] | select(.family == "frontier-rule")] as $r | [.arms[] | select(.name == "frontier")][0] as $f |
  ($r | length == 1) and $r[0].name == "frontier:loss-rule" and $r[0].energy_saved > 0 and
  $r[0].throughput_lost <= $f.throughput_lost' "$tmp/pp.json"
check "pipeline: capnet online saves energy, no profile" jqt '[.arms[] | select(.name == "capnet:online")] |
  length == 1 and .[0].family == "capnet" and .[0].energy_saved > 0 and (.[0].cost | startswith("none"))' "$tmp/pp.json"
check "pipeline: an EnvPipe-like arm (slack only)" jqt '[.arms[] | select(.family == "envpipe")] |
  length == 1 and .[0].name == "envpipe-like" and .[0].throughput_lost < 0.012' "$tmp/pp.json"
check "pipeline: Zeus with and without its profiling" jqt '[.arms[] | select(.family == "zeus") | .cost] ==
  ["profiling in run", "profiling not counted"]' "$tmp/pp.json"
check "eval runs capnet-online" quiet "$bin" eval "$pp" --controllers capnet-online,capnet-online:target=0.02 \
  --seeds 1 --duration-s 120
expect_exit2 "capnet-online: a bad option" "target" eval "$pp" --controllers capnet-online:target=2 \
  --seeds 1 --duration-s 60
check "eval runs the frontier controller" quiet "$bin" eval "$pp" --controllers frontier,frontier:slowdown=0.05 \
  --seeds 1 --duration-s 120
expect_exit2 "frontier on a job that is not a pipeline" "not a pipeline job" eval "$scn" \
  --controllers frontier --seeds 1 --duration-s 60
check "train --task caps" quiet "$bin" train --task caps "$scn" --alpha 0.5 --iterations 2 --pairs 2 \
  --variants 1 --episode-s 60 --max-gpus 2 --validate-every 1 --out "$tmp/cap.json"
check "trained policy loads" quiet "$bin" eval "$scn" --controllers "capnet:$tmp/cap.json" --seeds 1 \
  --duration-s 60
check "eval on a caps scenario" "$bin" eval "$scn" --controllers "static:knob=caps,capnet:$src/policies/capnet-a100-alpha0.3.json" \
  --seeds 2 --duration-s 120 --json >"$tmp/e.json"
check "eval energy columns vs the unlisted uncapped run" jqt '.energy_vs.reference == "uncontrolled" and
  (.controllers | length == 2) and (.controllers[1].energy_vs | has("energy_saved") and
  has("throughput_lost") and has("edp_change"))' "$tmp/e.json"
check "eval energy table" sh -c "'$bin' eval '$scn' --controllers uncontrolled,capnet:'$src'/policies/capnet-a100-alpha0.3.json \
  --seeds 1 --duration-s 120 | grep -q 'saved %'"
check "--energy-vs none drops them" "$bin" eval "$scn" --controllers uncontrolled --seeds 1 --duration-s 60 \
  --energy-vs none --json >"$tmp/n.json"
check "no energy_vs" jqt 'has("energy_vs") | not' "$tmp/n.json"
expect_exit2 "unknown --energy-vs row" "energy-vs" eval "$scn" --controllers uncontrolled --seeds 1 \
  --duration-s 60 --energy-vs pid
check "alpha recorded" jqt '.metadata.alpha == 0.5 and .metadata.task == "caps"' "$tmp/cap.json"
expect_exit2 "bad alpha" "alpha" train --task caps "$scn" --alpha -1 --out "$tmp/x.json"
expect_exit2 "bad task" "task" train --task knobs "$scn" --out "$tmp/x.json"
expect_exit2 "missing scenario" "nope.yaml" caps nope.yaml
expect_exit2 "ppo policy as capnet" "cap_step|observation entry" eval "$scn" \
  --controllers "capnet:$src/policies/grpo-7b-a100.json" --seeds 1
finish caps_smoke
