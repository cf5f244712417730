#!/usr/bin/env bash
# shellcheck disable=SC2016  # the $names in single quotes are jq's, not the shell's
# shellcheck disable=SC2154  # $out is set by scratch_dir (lib/common.sh)
# End-to-end: `flexwatt pipeline profile`. The Python hook's unit tests; a two-stage job whose
# ranks report through the hook (clients/python PipelineTimings, a stand-in clock) beside a
# 2 Hz trace written by hand at two caps: the profile holds each stage's op times and its
# power while computing (300 and 220 W, from the energy counter less 100 W blocking) and
# `pipeline plan` reads it; --sim: the probe plan and its cost without --probe, and with it a
# profile whose plan is within 1 point of the simulated job's offline profile's plan; --help;
# bad input (file:line: field, exit 2).
# Usage: bash pipeline_profile.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
command -v python3 >/dev/null || need_tool python3

check "the hook's unit tests" python3 "$src/clients/python/test_pipeline_timings.py" -q

mkdir -p "$out/job"
# Two stages (GPUs 0, 1), one pipeline; 0-40 s at 400 W (1410 MHz): forward 0.2 s, backward
# 0.4 s per 1 s cycle at 300 W; 40-80 s at 250 W (1005 MHz): forward 0.25 s, backward 0.5 s
# at 220 W; 100 W while waiting. The trace: every 0.5 s, the exact energy counter.
python3 - "$src/clients/python" "$out/job" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import flexwatt_client as fc
d = sys.argv[2]
now = [0]
def clock():
    return now[0]
rows = ["time_s,gpu,power_w,energy_j,power_limit_w,sm_util,mem_util,sm_clock_mhz,temp_c"]
for stage in (0, 1):
    now[0] = 0  # the anchor: mono 0 is unix 1.7e9
    tm = fc.PipelineTimings(f"{d}/rank{stage}.jsonl", stage=stage, stages=2, gpu=stage,
                            clock_ns=clock, wall_s=lambda: 1.7e9)
    busy = []
    for cyc in range(80):
        f, b, p = (0.2, 0.4, 300.0) if cyc < 40 else (0.25, 0.5, 220.0)
        t = float(cyc)
        now[0] = int(t * 1e9); tm.step_start(); tm.op_start("forward", cyc)
        now[0] = int((t + f) * 1e9); tm.op_end("forward", cyc)
        busy.append((t, t + f, p))
        t2 = t + f + 0.05
        now[0] = int(t2 * 1e9); tm.op_start("backward", cyc)
        now[0] = int((t2 + b) * 1e9); tm.op_end("backward", cyc)
        busy.append((t2, t2 + b, p))
        tm.step_end()
    tm.close()
    for i in range(161):
        t = 0.5 * i
        e = 100.0 * t + sum((p - 100.0) * max(0.0, min(t, e1) - s) for s, e1, p in busy)
        cap, clk = (400, 1410) if t < 40 else (250, 1005)
        rows.append(f"{t:.1f},{stage},0,{e:.4f},{cap},,,{clk},")
body = sorted(rows[1:], key=lambda r: float(r.split(",")[0]))
open(f"{d}/gpus.csv", "w").write("\n".join([rows[0]] + body) + "\n")
PY
check "profile from the hook's records" "$bin" pipeline profile --timings "$out/job" \
  --trace "$out/job/gpus.csv" --trace-start-unix-s 1700000000 --blocking-w 100 \
  -o "$out/job.csv" --json >"$out/job.json"
check "two clocks per stage, compute power from the counter" jqt '
  .acquisition.fewest_measured_clocks == 2 and
  ([.acquisition.measured[] | select(.clock_mhz == 1410) | .compute_w - 300 | fabs < 0.5] | all) and
  ([.acquisition.measured[] | select(.clock_mhz == 1005) | .compute_w - 220 | fabs < 0.5] | all) and
  ([.acquisition.measured[] | select(.clock_mhz == 1410) | .forward_s - 0.2 | fabs < 1e-6] | all)' \
  "$out/job.json"
check "resampled to 15 MHz between them" jqt '.acquisition.profile_clocks == 56' "$out/job.json"
check "the probe plan is stated, not run" jqt '.probed == false and
  (.probe_plan.steps | length) == 13 and .probe_plan.total_min > 3' "$out/job.json"
check "pipeline plan reads the profile" "$bin" pipeline plan "$out/job.csv" --microbatches 4 \
  --tp 1 --global-batch 4 --blocking-w 100 --json >"$out/plan.json"
check "a relative trace needs its start" bash -c \
  "'$bin' pipeline profile --timings '$out/job' --trace '$out/job/gpus.csv' --blocking-w 100 \
   2>&1 >/dev/null | grep -q 'trace-start-unix-s'"

# The simulator: the plan and its cost; then the profile and the check against the offline plan.
sc="$src/scenarios/caps-pp4-a100x8.yaml"
check "--sim states the probe plan" bash -c "'$bin' pipeline profile --sim '$sc' \
  | grep -q 'cost: .* min in all'"
check "--sim --probe runs" "$bin" pipeline profile --sim "$sc" --probe --record-dir "$out/rec" \
  -o "$out/sim.csv" --json >"$out/sim.json"
check "within 1 point of the offline profile's plan" jqt '.simulated_check.gap_points | fabs <= 1' \
  "$out/sim.json"
check "hook records and trace written" test -s "$out/rec/rank-000.jsonl" -a -s "$out/rec/gpus.csv"
check "its profile plans" "$bin" pipeline plan "$out/sim.csv" --microbatches 16 --tp 1 \
  --global-batch 32 --json >"$out/simplan.json"

# --help and bad input.
check "--help" bash -c "'$bin' pipeline profile --help | grep -q -- '--probe'"
printf '{"type":"op","instr":"forward","mb":0,"step":0,"start_ns":1,"end_ns":2}\n' >"$out/bad.jsonl"
expect_exit2 "timings must start with an anchor" 'bad.jsonl:1: type: the first record must be an anchor' \
  pipeline profile --timings "$out/bad.jsonl" --trace "$out/job/gpus.csv" --trace-start-unix-s 1
expect_exit2 "needs a trace" 'give --timings and --trace' pipeline profile --timings "$out/job"
expect_exit2 "--probe needs the agent" 'give --agent' pipeline profile --timings "$out/job" \
  --trace "$out/job/gpus.csv" --trace-start-unix-s 1700000000 --probe
"$bin" pipeline profile --timings "$out/job" --trace "$out/job/gpus.csv" \
  --trace-start-unix-s 1700000000 --probe --agent http://127.0.0.1:9 --probe-levels 1 \
  >/dev/null 2>"$out/agent.err"; rc=$?
check "an unreachable agent fails the probes (exit $rc, want 1)" test "$rc" -eq 1
check "and says so" grep -q "flexwatt pipeline profile: .*agent" "$out/agent.err"
printf 'time_s,gpu\n' >"$out/t.csv"
expect_exit2 "trace columns" 't.csv:1: power_w: column missing' pipeline profile \
  --timings "$out/job" --trace "$out/t.csv"
finish pipeline_profile
