#!/usr/bin/env bash
# Golden outputs: runs `flexwatt demo --json` and `flexwatt eval --json` on every shipped
# scenario and compares them, byte for byte, with tests/fixtures/golden/. A refactor that
# must not change results (the re-layering) passes this unchanged; a change to the model
# regenerates the fixtures on purpose with --update and says so in its commit.
# Usage: scripts/golden.sh [--update] [FLEXWATT_BIN]
set -u
cd "$(dirname "$0")/.."
update=0
[ "${1:-}" = --update ] && { update=1; shift; }
bin=${1:-build/flexwatt}
dir=tests/fixtures/golden
mkdir -p "$dir"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
run() {  # NAME ARGS...
  local name=$1; shift
  if ! "$bin" "$@" --json >"$tmp/$name.json" 2>"$tmp/$name.err"; then
    echo "FAIL $name: exit $? ($(tail -1 "$tmp/$name.err"))"; fail=1; return
  fi
  if [ $update = 1 ]; then cp "$tmp/$name.json" "$dir/$name.json"; echo "updated $name"
  elif cmp -s "$tmp/$name.json" "$dir/$name.json"; then echo "same    $name"
  else echo "DIFFERS $name"; diff <(jq -S . "$dir/$name.json") <(jq -S . "$tmp/$name.json") | head -20; fail=1
  fi
}
run demo demo --seeds 2 --duration-s 600 --out "$tmp/demo"
ctl=uncontrolled,static,static:knob=caps,threshold,pid,zeus,lookahead:horizon_s=60
for s in grpo-7b-a100 grpo-7b-a100-grid-event grpo-14b-a100x2 grpo-72b-a100x4 \
         grpo-72b-a100x4-rollout pretrain-dense-h100x8 pretrain-moe-h200x8 finetune-moe-h200x8; do
  run "eval-$s" eval "scenarios/$s.yaml" --controllers "$ctl" --seeds 2 --duration-s 600
done
run eval-ppo-7b eval scenarios/grpo-7b-a100.yaml --seeds 2 --duration-s 600 \
  --controllers ppo:policies/grpo-7b-a100.json,ppo:policies/grpo-7b-a100-knobs.json
run eval-ppo-72b eval scenarios/grpo-72b-a100x4.yaml --seeds 2 --duration-s 600 \
  --controllers ppo:policies/grpo-72b-a100x4.json
run eval-fleet eval scenarios/fleet-16xa100.yaml --controllers uncontrolled,fleet --seeds 2 --duration-s 600
run authority authority scenarios/grpo-7b-a100.yaml --duration-s 300
exit $fail
