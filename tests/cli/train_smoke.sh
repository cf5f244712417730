#!/usr/bin/env bash
# `flexwatt train --iterations 2` end to end: policy, log and checkpoint written; the policy
# loads as `ppo:PATH` in eval; --resume continues from the checkpoint.
# Usage: bash train_smoke.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scn="$src/scenarios/grpo-7b-a100.yaml"
fail() { echo "FAIL: $*"; exit 1; }
"$bin" train "$scn" --iterations 2 --envs 2 --episode-s 120 --seed 3 --out "$tmp/p.json" \
  >"$tmp/out.txt" 2>&1 || fail "train exited $?: $(cat "$tmp/out.txt")"
grep -q SIMULATED "$tmp/out.txt" || fail "summary not labelled simulated"
for f in p.json p.train.csv p.ckpt.json; do [ -s "$tmp/$f" ] || fail "$f missing"; done
[ "$(wc -l <"$tmp/p.train.csv")" -eq 3 ] || fail "log should hold a header and 2 rows"
head -1 "$tmp/p.train.csv" | grep -q "iteration,total_steps,episodes,mean_return,violation_rate_window" \
  || fail "log header"
jq -e '.format == "flexwatt-policy"
  and .metadata.scenario_family == "grpo-7b-a100"
  and .metadata.training_seed == 3
  and .observation.names[0] == "power_0.5s_rel"
  and .action.names == ["gen_concurrency", "group_size"]
  and (.flexwatt_version | length > 0)' "$tmp/p.json" >/dev/null || fail "policy file content"
# The stored command holds every flag given.
jq -e '.metadata.command | test("--envs 2") and test("--episode-s 120") and test("--seed 3")' \
  "$tmp/p.json" >/dev/null || fail "metadata.command lacks flags: $(jq -r .metadata.command "$tmp/p.json")"
# Absolute-level actions: the spec holds the level counts and eval accepts the policy.
"$bin" train "$scn" --iterations 1 --envs 2 --episode-s 60 --seed 3 --actions level \
  --margin 0.03 --out "$tmp/l.json" >/dev/null 2>&1 || fail "train --actions level"
jq -e '.action.categories == [22, 10]' "$tmp/l.json" >/dev/null || fail "level action spec"
"$bin" eval "$scn" --controllers "ppo:$tmp/l.json" --seeds 1 --duration-s 60 >/dev/null 2>&1 \
  || fail "eval with a level-action policy"
# A knob subset and phase-boundary decisions are recorded in the policy and eval takes it.
"$bin" train "$scn" --iterations 1 --envs 2 --episode-s 60 --seed 3 --actions level \
  --knobs gen_concurrency --decide-on phase --max-period-s 30 --churn-penalty 0.1 \
  --out "$tmp/k.json" >/dev/null 2>&1 || fail "train --knobs --decide-on phase"
[ "$(jq -c '.action.names' "$tmp/k.json")" = '["gen_concurrency"]' ] || fail "knob subset spec"
[ "$(jq -r '.metadata.decide_on' "$tmp/k.json")" = phase ] || fail "decide_on not recorded"
[ "$(jq -r '.metadata.max_decision_period_s' "$tmp/k.json")" = 30 ] || fail "max period"
"$bin" eval "$scn" --controllers "ppo:$tmp/k.json" --seeds 1 --duration-s 60 >/dev/null 2>&1 \
  || fail "eval with a knob-subset phase policy"
# The power cap as an action factor: named in the spec, and eval's ppo writes caps.
"$bin" train "$scn" --iterations 1 --envs 2 --episode-s 60 --seed 3 --actions level \
  --knobs group_size,power_cap --window-rule sliding --out "$tmp/c.json" >/dev/null 2>&1 \
  || fail "train power_cap"
[ "$(jq -r '.metadata.reward.window_rule' "$tmp/c.json")" = sliding ] || fail "window rule"
[ "$(jq -c '.action.names' "$tmp/c.json")" = '["group_size","power_cap"]' ] || fail "cap spec"
"$bin" eval "$scn" --controllers "ppo:$tmp/c.json" --seeds 1 --duration-s 60 >/dev/null 2>&1 \
  || fail "eval with a power-cap policy"
# A family: two files and a drawn drift; both files are drawn, the family is recorded.
"$bin" train "$scn" "$src/scenarios/grpo-7b-a100-drift.yaml" --iterations 4 --envs 2 \
  --episode-s 60 --seed 3 --len-curves growing,u,declining --budget-steps 2 --json \
  --out "$tmp/f.json" >"$tmp/f.out" 2>&1 || fail "train over a family: $(cat "$tmp/f.out")"
jq -e '.family_draws | length == 2 and all(. > 0)' "$tmp/f.out" >/dev/null \
  || fail "family draws: $(cat "$tmp/f.out")"
jq -e '.metadata.family.members | length == 2' "$tmp/f.json" >/dev/null || fail "family members"
"$bin" eval "$scn" --controllers "ppo:$tmp/p.json" --seeds 1 --duration-s 60 >"$tmp/eval.txt" 2>&1 \
  || fail "eval with the trained policy: $(cat "$tmp/eval.txt")"
grep -q "ppo:" "$tmp/eval.txt" || fail "eval table lacks the ppo row"
"$bin" train "$scn" --iterations 3 --envs 2 --episode-s 120 --seed 3 --out "$tmp/p.json" \
  --resume "$tmp/p.ckpt.json" >/dev/null 2>&1 || fail "resume"
[ "$(wc -l <"$tmp/p.train.csv")" -eq 4 ] || fail "resumed run should append one row"
# Imitation of mpc: one short teacher episode, two epochs; the policy loads as ppo: and records
# its teacher; the dataset has one row per 3 s decision (120 s: 40) plus its header.
"$bin" train "$scn" --imitate mpc --actions level --period-s 3 \
  --knobs gen_concurrency,group_size,power_cap --len-curves growing --episode-s 120 \
  --teacher-episodes 1 --fit-epochs 2 --seed 3 --json --dataset "$tmp/i.csv" --out "$tmp/i.json" \
  >"$tmp/i.out" 2>&1 || fail "train --imitate: $(cat "$tmp/i.out")"
[ "$(jq -r '.metadata.imitation.teacher' "$tmp/i.json")" = mpc ] || fail "imitation teacher"
[ "$(jq -r '.samples' "$tmp/i.out")" = 40 ] || fail "imitation samples: $(cat "$tmp/i.out")"
[ "$(wc -l <"$tmp/i.csv")" -eq 41 ] || fail "imitation dataset rows"
"$bin" eval "$scn" --controllers "ppo:$tmp/i.json" --seeds 1 --duration-s 60 >/dev/null 2>&1 \
  || fail "eval with an imitated policy"
echo "train_smoke: all checks passed"
