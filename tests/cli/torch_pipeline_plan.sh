#!/usr/bin/env bash
# shellcheck disable=SC2016  # the $names in single quotes are jq's, not the shell's
# A real framework through the whole deploy path (issue 46, "A real framework in CI"): a
# PyTorch pipeline-parallel job (examples/torch_pipeline.py: 4 stage processes on CPU,
# torch.distributed over gloo on loopback, the 1F1B schedule written out, activations and
# gradients sent between neighbouring stages) reports through the Python client's pipeline hook
# (PipelineTimings, one JSONL file per rank) and registers with an agent on its sim backend;
# `pipeline profile --probe --agent` turns the hook's records and the agent's 2 Hz trace into a
# profile, `pipeline plan --json` plans it, and the plan goes to the agent as `plan:PATH`.
# Checks:
#  - the job trains: its loss falls; every rank's ops per step are the 1F1B order (warm-up
#    forwards, one forward and one backward in turn, cool-down backwards), and a forward starts
#    after the previous stage's forward of that micro-batch ended, a backward after the next
#    stage's backward ended (the hook's times; the ranks share the host's monotonic clock);
#  - the agent lists the job (registered by stage 0 as "pp", kind pipeline, GPUs 0-3: stage s
#    on GPU s);
#  - the probes ran through the agent (150 W, then 400 W; the operator's controller back after)
#    and the profile has a point at each cap for every stage, whose forward time lies within
#    that stage's forward times in the hook's records (the profile's times are the job's);
#  - from a cap no stage of the plan gets, PUT plan:PATH,stages=0:1:2:3 moves every GPU's cap in
#    /v1/status to its stage's plan cap, put into the A100's 100-400 W range (null: 400 W, the
#    cap found at start; the plan is made with --allow-above-max, see below);
#  - the job exits 0 at the stop file and deregisters; the plan stays in force (leaving it is
#    the operator's act); the previous controller back: every cap 400 W; the plan again, then
#    SIGTERM: exit 0, "caps restored", restore file removed.
# Simulated: the GPUs. The agent runs `sim:` on a 4-GPU scenario whose pipeline job "pp" has
# the torch job's shape (4 stages x 8 micro-batches, one GPU per stage); the torch job
# registers under that id, so on sim the job's progress in /v1/status is the simulated job's
# (what the probes measure throughput by) and the power, energy counter and SM clock in the
# trace are the simulator's at the caps written. The op times are the torch job's own on CPU,
# which no cap slows: the profile mixes real timings with simulated power, so its figures and
# the plan's caps are not checked against anything, only carried through to the GPUs.
# About 25 s on 2 cores; every wait is bounded. Under CI=true a missing PyTorch fails.
# Usage: torch_pipeline_plan.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/agent.sh"
use_torch_python  # sets py (lib/agent.sh)
# The job's process group (its launcher and 4 stages), killed on exit beside the agent.
job=
job_cleanup() {
  [ -n "$job" ] && kill -9 -- "-$job" 2>/dev/null
  agent_cleanup
}
trap job_cleanup EXIT

cat >"$tmp/pp.yaml" <<'YAML'
name: torch-pp4
duration_s: 100000
sim: {dt_s: 0.1, noise_w: 1.0}
gpus:
  - {model: a100-sxm4-80gb, count: 4}
budget: {watts: 1600, scope: job, window_s: 30}
jobs:
  - {name: pp, kind: pipeline, gpus: 4, stages: 4,
     stage_work: [[0.015, 0.03], [0.01, 0.02], [0.0125, 0.025], [0.01, 0.02]],
     microbatches: 8, dp: 1, tokens_per_iter: 256}
YAML
mkdir -p "$tmp/plans"
cat >"$tmp/agent.yaml" <<YAML
backend: sim:$tmp/pp.yaml
period_s: 0.5
controller: static:knob=caps,value=400
job_silent_after_s: 0
trace_dir: $tmp/trace
policy_dirs: [$tmp/plans]
$agent_local
YAML
"$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent.out" 2>"$tmp/agent.err" &
track_agent $!
check "the agent answers" wait_healthz
url="http://127.0.0.1:$port"

# wait_for SECONDS COMMAND...: until the command succeeds, polled every 0.1 s; 1 if it never did.
wait_for() {
  local n=$(($1 * 10)); shift
  for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
  return 1
}
check "the agent starts at 400 W" wait_status_caps '[400,400,400,400]'

# The job: setsid gives it its own process group ($job), so the trap reaches its stages too.
setsid "$py" "$src/examples/torch_pipeline.py" --stages 4 --microbatches 8 --steps 5000 \
  --stop-file "$tmp/stop" --timings-dir "$tmp/timings" --gpus 0,1,2,3 --url "$url" \
  --job-id pp >"$tmp/job.out" 2>"$tmp/job.err" &
job=$!
# Running for 3 s of steps (the last stage's step_s): the trace's window at 400 W before the
# probes holds 2 s after the 1 s settling.
stepped() { jq -se '[.[].step_s // 0] | add >= 3' "$tmp/job.out" >/dev/null 2>&1; }
check "the job runs its steps (at most 60 s to start)" wait_for 60 stepped
job_listed() {
  curl -s --max-time 2 "$url/v1/jobs" | jq -e '.jobs[] | select(.id == "pp") | .kind == "pipeline"' \
    >/dev/null
}
check "the agent lists the job pp" wait_for 5 job_listed

start=$(curl -s --max-time 2 "$url/v1/status" | jq 'now - .loop.plant_time_s')
timeout 90 "$bin" pipeline profile --timings "$tmp/timings" --trace "$tmp/trace" \
  --trace-start-unix-s "$start" --probe --agent "$url" --job-id pp --probe-caps 150 \
  --settle-s 1 --probe-measure-s 3 -o "$tmp/prof.csv" --json >"$tmp/p.json" 2>"$tmp/p.err"
rc=$?
check "the probes ran through the agent (rc=$rc: $(tail -1 "$tmp/p.err"))" test "$rc" -eq 0
check "the agent put the previous controller back" grep -q "controller restored" "$tmp/p.err"
check "a point at 150 W and at 400 W on every stage" jqt '.probed and
  ([.acquisition.measured[] | [.stage, .cap_w]] | sort
   == [[0,150],[0,400],[1,150],[1,400],[2,150],[2,400],[3,150],[3,400]])' "$tmp/p.json"
# Per stage, the shortest and longest forward the hook recorded.
jq -s -c 'group_by(.stage) | map({stage: .[0].stage,
  lo: (map(.fwd) | min), hi: (map(.fwd) | max)})' <(for s in 0 1 2 3; do
  jq -c --argjson s "$s" 'select(.type == "op" and .instr == "forward")
    | {stage: $s, fwd: ((.end_ns - .start_ns) / 1e9)}' "$tmp/timings/rank$s.jsonl"; done) \
  >"$tmp/fwd.json"
check "each point's forward time is within its stage's recorded ones ($(jq -c . "$tmp/fwd.json"))" \
  jqt --slurpfile f "$tmp/fwd.json" '[.acquisition.measured[] | . as $m
  | $f[0][] | select(.stage == $m.stage) | $m.forward_s >= .lo and $m.forward_s <= .hi]
  | length == 8 and all' "$tmp/p.json"

# --allow-above-max: the compute power this profile gives the highest clock is the simulated
# energy over the CPU ranks' busy time, which may exceed the A100's 400 W; the planner would
# refuse a stage none of whose clocks fits under it. A cap planned above 400 W is written as
# 400 W (the limiter clamps it), as `want` below says.
plan="$tmp/plans/plan.json"
"$bin" pipeline plan "$tmp/prof.csv" --microbatches 8 --tp 1 --global-batch 8 --allow-above-max \
  --json >"$plan" 2>"$tmp/plan.err"
check "the plan has 4 stages, constant caps ($(tail -1 "$tmp/plan.err"))" \
  jqt '.stages == 4 and (.constant.stages | length == 4)' "$plan"
# Per stage, the cap its GPU gets: the plan's, within the A100's 100-400 W; null: 400.
want=$(jq -c '[.constant.stages[].cap_w | if . == null then 400 else ([([., 100] | max), 400] | min) end
  | . * 10 | round / 10]' "$plan")
# Before the plan, every GPU at a cap no stage of the plan gets (400 W unless a stage gets
# that), so that its caps are seen to move to the plan's.
pre=$(jq -n --argjson w "${want:-[]}" 'first(400, 100, 250, 175, 325 | select(. as $c | any($w[]; . == $c) | not))')
put_controller "static:knob=caps,value=$pre"
check "every GPU at $pre W before the plan ($code)" wait_status_caps "[$pre,$pre,$pre,$pre]"
put_controller "plan:$plan,stages=0:1:2:3,period_s=0.5"
check "PUT plan: 202 ($code: $(cat "$tmp/put.json"))" test "$code" = 202
check "each GPU's cap is its stage's plan cap ($want)" wait_status_caps "$want"

# The job ends at the stop file.
touch "$tmp/stop"
job_gone() { ! kill -0 "$job" 2>/dev/null; }
check "the job exits within 30 s of the stop file" wait_for 30 job_gone
wait "$job"
jrc=$?
job=
check "the job exited 0 ($jrc: $(tail -1 "$tmp/job.err"))" test "$jrc" -eq 0
check "its loss fell ($(tail -1 "$tmp/job.out"))" jqt 'select(.done) | .steps >= 10 and
  .last_loss < .first_loss' "$tmp/job.out"
# The 1F1B order and the cross-stage dependencies, from the hook's records.
check "every step ran 1F1B, each op after its input arrived" "$py" - "$tmp/timings" <<'PY'
import json, sys
S, M = 4, 8
ops = {}  # (stage, step) -> [(kind, mb, start, end)] in start order
for s in range(S):
    for line in open(f"{sys.argv[1]}/rank{s}.jsonl"):
        r = json.loads(line)
        if r["type"] == "op":
            ops.setdefault((s, r["step"]), []).append(
                ("F" if r["instr"] == "forward" else "B", r["mb"], r["start_ns"], r["end_ns"]))
steps = {n for (_, n) in ops}
bad = []
for n in sorted(steps):
    t = {}
    for s in range(S):
        seq = sorted(ops.get((s, n), []), key=lambda o: o[2])
        w = min(S - 1 - s, M)
        want = ([("F", i) for i in range(w)]
                + [x for j in range(M - w) for x in (("F", w + j), ("B", j))]
                + [("B", i) for i in range(M - w, M)])
        if [(k, mb) for k, mb, _, _ in seq] != want:
            bad.append(f"step {n} stage {s}: order {[(k, mb) for k, mb, _, _ in seq]}")
        for a, b in zip(seq, seq[1:]):
            if b[2] < a[3]:
                bad.append(f"step {n} stage {s}: {b[:2]} starts before {a[:2]} ends")
        for k, mb, t0, t1 in seq:
            t[(s, k, mb)] = (t0, t1)
    for s in range(S):
        for mb in range(M):
            if s > 0 and t[(s, "F", mb)][0] < t[(s - 1, "F", mb)][1]:
                bad.append(f"step {n}: F{mb} on stage {s} before stage {s - 1}'s ended")
            if s < S - 1 and t[(s, "B", mb)][0] < t[(s + 1, "B", mb)][1]:
                bad.append(f"step {n}: B{mb} on stage {s} before stage {s + 1}'s ended")
print(f"  {len(steps)} steps checked on {S} stages")
for b in bad[:10]:
    print("  " + b)
sys.exit(1 if bad or len(steps) < 10 else 0)
PY
job_deregistered() { curl -s --max-time 2 "$url/v1/jobs" | jq -e '[.jobs[].id] | index("pp") == null' >/dev/null; }
check "the job deregistered at exit" wait_for 5 job_deregistered
check "the plan stays in force after the job" wait_status_caps "$want"

# Leaving the plan: the previous controller back, then the agent's exit with the plan in force.
put_controller "static:knob=caps,value=400"
check "the previous controller back: 202 ($code)" test "$code" = 202
check "every cap 400 W again" wait_status_caps '[400,400,400,400]'
put_controller "plan:$plan,stages=0:1:2:3,period_s=0.5"
check "the plan again" wait_status_caps "$want"
check "the restore file holds the caps found at start" test -s "$tmp/saved.json"
kill -TERM "$agent"
wait "$agent"
rc=$?
check "SIGTERM: exit 0 ($rc)" test "$rc" -eq 0
check "the agent restored the caps" grep -q "caps restored" "$tmp/agent.err"
check "and removed its restore file" test ! -e "$tmp/saved.json"
explain_process agent "$agent" "$tmp/agent.err" "$tmp/p.err" "$tmp/job.err"
agent=
finish torch_pipeline_plan
