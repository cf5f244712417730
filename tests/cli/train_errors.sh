#!/usr/bin/env bash
# `flexwatt train` and `ppo:PATH` reject bad input with exit code 2 and a clear message.
# Usage: bash train_errors.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
scn="$src/scenarios/grpo-7b-a100.yaml"
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
expect2() { expect_exit2 "$@"; }
expect2 "missing --out" "--out" train "$scn" --iterations 2
expect2 "bad iterations" "iterations" train "$scn" --iterations 0 --out "$tmp/p.json"
expect2 "missing scenario" "nope.yaml" train nope.yaml --out "$tmp/p.json"
expect2 "bad --set" "budget.wats" train "$scn" --set budget.wats=3 --out "$tmp/p.json"
expect2 "unknown knob" "unknown knob 'batch'" train "$scn" --knobs batch --out "$tmp/p.json"
expect2 "bad window rule" "window-rule" train "$scn" --window-rule hopping --out "$tmp/p.json"
expect2 "bad decide-on" "decide-on" train "$scn" --decide-on step --out "$tmp/p.json"
expect2 "max period below period" "max-period-s" train "$scn" --decide-on phase --period-s 20 \
  --max-period-s 10 --out "$tmp/p.json"
# A bad family spec (training over a family, docs/rl.md) names the field.
expect2 "unknown curve shape" "--len-curves: unknown shape 'zigzag'" train "$scn" \
  --len-curves growing,zigzag --out "$tmp/p.json"
expect2 "len range upside down" "--len-range 2.5,0.5" train "$scn" --len-curves u \
  --len-range 2.5,0.5 --out "$tmp/p.json"
expect2 "step range not a range" "--budget-step-range 0.9" train "$scn" --budget-steps 1 \
  --budget-step-range 0.9 --out "$tmp/p.json"
expect2 "family member with other jobs" "caps-pretrain-a100x1.yaml: a family member" train \
  "$scn" "$src/scenarios/caps-pretrain-a100x1.yaml" --out "$tmp/p.json"
expect2 "missing family member" "nope.yaml" train "$scn" nope.yaml --out "$tmp/p.json"
jq '.metadata.decide_on = "sometimes"' "$src/policies/grpo-7b-a100.json" >"$tmp/rule.json"
expect2 "bad decide_on in policy" "decide_on is 'sometimes'" eval "$scn" \
  --controllers "ppo:$tmp/rule.json"
echo '{"x": 1}' >"$tmp/bad_ckpt.json"
expect2 "bad checkpoint" "not a flexwatt train checkpoint" train "$scn" --out "$tmp/p.json" \
  --resume "$tmp/bad_ckpt.json"
expect2 "missing policy" "nope.json" eval "$scn" --controllers ppo:nope.json
expect2 "ppo without path" "needs an argument" eval "$scn" --controllers ppo
# A policy file whose observation spec is not this flexwatt's.
jq '.observation.names[1] = "power_11s_rel"' "$src/policies/grpo-7b-a100.json" \
  >"$tmp/renamed.json"
expect2 "mismatched observation spec" "observation spec does not match.*power_11s_rel" \
  eval "$scn" --controllers "ppo:$tmp/renamed.json"
# Imitation (--imitate, docs/rl.md "Imitation of a planner").
expect2 "unknown teacher" "--imitate: unknown controller 'nosuch'" train "$scn" --imitate nosuch \
  --actions level --out "$tmp/p.json"
expect2 "imitate without level actions" "--imitate: needs --actions level" train "$scn" \
  --imitate mpc --out "$tmp/p.json"
expect2 "imitate with resume" "--imitate: --resume is not supported" train "$scn" --imitate mpc \
  --actions level --resume "$tmp/bad_ckpt.json" --out "$tmp/p.json"
expect2 "imitate bad teacher option" "horizon" train "$scn" --imitate mpc:horizon_s=-1 \
  --actions level --episode-s 30 --teacher-episodes 1 --out "$tmp/p.json"
expect2 "no teacher episodes" "teacher-episodes" train "$scn" --imitate mpc --actions level \
  --teacher-episodes 0 --out "$tmp/p.json"
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "train_errors: all checks passed"
