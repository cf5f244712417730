#!/usr/bin/env bash
# shellcheck disable=SC2016  # the $names in single quotes are jq's, not the shell's
# `flexwatt pipeline profile --probe --agent`: the probes go through the node agent's API. An
# agent on the sim backend (a two-stage pipeline scenario, real time, 2 Hz trace in trace_dir);
# a stand-in job (two ranks in one process, their ops timed by the Python hook, PipelineTimings)
# registered as the agent's job; one probe level (100 W). The caps reach the agent's trace (the
# profile has a point at 100 W and at 400 W on both stages), the trace's start is taken from
# GET /v1/status (loop.plant_time_s, as docs/pipeline-profile.md says), and the operator's
# controller is back afterwards. The stand-in's ops are not the simulated job's, so the
# profile's figures are not checked here (the simulator's check: pipeline_profile.sh and
# tests/pipeline/profile_acquisition_test.cpp). A second profile probes at 399 W, which does not
# slow the job: it still profiles (the probes' PFI is not needed). About 25 s.
# Usage: pipeline_profile_agent.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/agent.sh"
command -v python3 >/dev/null || need_tool python3
cat >"$tmp/pp.yaml" <<'YAML'
name: pp-tiny
duration_s: 100000
sim: {dt_s: 0.1, noise_w: 0}
gpus:
  - {model: a100-sxm4-80gb, count: 2}
budget: {watts: 800, scope: job, window_s: 30}
jobs:
  - {name: pp, kind: pipeline, gpus: 2, stages: 2, stage_work: [[0.05, 0.1], [0.04, 0.08]],
     microbatches: 4, dp: 1, tokens_per_iter: 4096}
YAML
cat >"$tmp/agent.yaml" <<YAML
backend: sim:$tmp/pp.yaml
period_s: 0.5
controller: static:knob=caps,value=400
job_silent_after_s: 0
trace_dir: $tmp/trace
$agent_local
YAML
"$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent.out" 2>"$tmp/agent.err" &
track_agent $!
wait_healthz
url="http://127.0.0.1:$port"
curl -s --max-time 2 -X POST "$url/v1/jobs" -d '{"id": "pp"}' >/dev/null
cat >"$tmp/job.py" <<'PY'
import os, sys, time
sys.path.insert(0, sys.argv[1])
import flexwatt_client as fc
d, secs = sys.argv[2], float(sys.argv[3])
os.makedirs(d, exist_ok=True)
tms = [fc.PipelineTimings(f"{d}/rank{s}.jsonl", stage=s, stages=2, gpu=s, flush_every=8)
       for s in (0, 1)]
end = time.monotonic() + secs
while time.monotonic() < end:
    for tm in tms: tm.step_start()
    for m in range(4):
        for k, t in (("forward", 0.05), ("backward", 0.1)):
            for tm in tms: tm.op_start(k, m)
            time.sleep(t)
            for tm in tms: tm.op_end(k, m)
        time.sleep(0.05)
    for tm in tms: tm.step_end()
for tm in tms: tm.close()
PY
python3 "$tmp/job.py" "$src/clients/python" "$tmp/timings" 40 &
job=$!
sleep 1
start=$(curl -s --max-time 2 "$url/v1/status" | jq 'now - .loop.plant_time_s')
timeout 60 "$bin" pipeline profile --timings "$tmp/timings" --trace "$tmp/trace" \
  --trace-start-unix-s "$start" --probe --agent "$url" --job-id pp --probe-levels 1 \
  --settle-s 0.5 --probe-measure-s 2 -o "$tmp/prof.csv" --json >"$tmp/p.json" 2>"$tmp/p.err"
rc=$?
check "the probes ran through the agent (rc=$rc: $(tail -1 "$tmp/p.err"))" test "$rc" -eq 0
check "the agent put the previous controller back" grep -q "controller restored" "$tmp/p.err"
check "a point at 100 W and at 400 W on both stages, from the agent's trace" jqt '
  .probed and ([.acquisition.measured[] | [.stage, .cap_w]] | sort == [[0, 100], [0, 400], [1, 100], [1, 400]])' \
  "$tmp/p.json"
check "the profile is written" test -s "$tmp/prof.csv"
check "the operator's controller is in force" test \
  "$(curl -s --max-time 2 "$url/v1/status" | jq -r .controller)" = "static:knob=caps,value=400"
# A probe that does not slow the job (399 W, under 0.5 % of its throughput): the sweep's points
# give no PFI, which the profile does not need (its points are the trace's). It used to fail
# ("the measured points give no PFI").
timeout 60 "$bin" pipeline profile --timings "$tmp/timings" --trace "$tmp/trace" \
  --trace-start-unix-s "$start" --probe --agent "$url" --job-id pp --probe-caps 399 \
  --settle-s 0.5 --probe-measure-s 2 --json >"$tmp/p2.json" 2>"$tmp/p2.err"
rc=$?
check "a probe that does not slow the job still profiles (rc=$rc: $(tail -1 "$tmp/p2.err"))" \
  test "$rc" -eq 0
check "  ... and acquires both stages from the trace" jqt \
  '.probed and ([.acquisition.measured[].stage] | unique == [0, 1])' "$tmp/p2.json"
kill "$job" 2>/dev/null; wait "$job" 2>/dev/null
explain_process agent "$agent" "$tmp/agent.err" "$tmp/p.err"
kill -TERM "$agent"; wait "$agent"; agent=
finish pipeline_profile_agent
