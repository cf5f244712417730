#!/usr/bin/env bash
# Golden outputs: runs `flexwatt demo --json` and `flexwatt eval --json` on every shipped
# scenario and compares them, byte for byte, with tests/fixtures/golden/. A refactor that
# must not change results (the re-layering) passes this unchanged; a change to the model
# regenerates the fixtures on purpose with --update and says so in its commit.
# `make test` runs every fixture as its own ctest entry (golden.NAME: --only NAME), so they run
# in parallel and a failure names its fixture; --list prints the names (tests/CMakeLists.txt).
# Usage: scripts/golden.sh [--update] [--only NAME | --list] [FLEXWATT_BIN]
set -u
cd "$(dirname "$0")/.."
update=0 only="" list=0
while [ $# -gt 0 ]; do
  case $1 in
    --update) update=1; shift ;;
    --only) only=$2; shift 2 ;;
    --list) list=1; shift ;;
    *) break ;;
  esac
done
bin=${1:-build/flexwatt}
dir=tests/fixtures/golden
[ $list = 1 ] || mkdir -p "$dir"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ran=0
run() {  # NAME ARGS...
  local name=$1; shift
  if [ $list = 1 ]; then echo "$name"; return; fi
  if [ -n "$only" ] && [ "$name" != "$only" ]; then return; fi
  ran=$((ran + 1))
  "$bin" "$@" --json >"$tmp/$name.json" 2>"$tmp/$name.err"
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL $name: exit $rc ($(tail -1 "$tmp/$name.err"))"; fail=1; return
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
# The same-information baselines of a budget schedule (static:schedule=, docs/control.md): 1200 s
# so the grid event's drop at 600 s is inside the run.
run eval-grid-event-schedule eval scenarios/grpo-7b-a100-grid-event.yaml --seeds 2 --duration-s 1200 \
  --controllers static:schedule=levels,static:schedule=nominal
run eval-fleet eval scenarios/fleet-16xa100.yaml --controllers uncontrolled,fleet --seeds 2 --duration-s 600
run authority authority scenarios/grpo-7b-a100.yaml --duration-s 300
if [ $list = 0 ] && [ -n "$only" ] && [ $ran = 0 ]; then echo "FAIL: no golden fixture $only"; fail=1; fi
exit $fail
