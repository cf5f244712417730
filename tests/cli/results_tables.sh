#!/usr/bin/env bash
# The results table scripts (scripts/caps_targets.sh, fleet_sim_table.sh, fleet_faults_table.sh,
# bench_table.sh, calib_table.py, fleet_scale_table.py, caps_adapt_table.sh, parse_floor_table.sh,
# bench_timings.py, results_summary.py, capnet_training_table.py, authority_table.sh,
# fit_cases_table.py, dr_tables.sh, site_loop_sim_table.sh, pipeline_validate_table.py,
# pipeline_table.sh):
# caps_targets.sh on synthetic `flexwatt caps --json` outputs and a stand-in bench (its verdicts
# follow the inputs: a target met or missed, the alphas positive in every imbalanced scenario),
# and every script's bad input (exit 2) and failed run (exit 1). Fast: nothing is simulated.
# Usage: bash results_tables.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
command -v jq >/dev/null || need_tool jq

# caps JSON: SCENARIO SAVED LOST (best arm) and per alpha margins vs uniform / per-GPU.
caps_json() {  # SCENARIO SAVED M_UNIF_01 M_UNIF_05 M_PGPU_01 M_PGPU_05
  jq -n --arg s "$1" --argjson saved "$2" --argjson u1 "$3" --argjson u5 "$4" --argjson p1 "$5" \
    --argjson p5 "$6" '{scenario: $s, best_at_low_loss: {arm: "uniform:390W", energy_saved: $saved,
      throughput_lost: 0.0098, uniform_frontier: 0.0103, per_gpu_frontier: 0.0089},
    arms: [{name: "uncapped", family: "uncapped", energy_saved: 0, throughput_lost: 0},
      {name: "capnet:alpha=0.10", family: "capnet", energy_saved: 0.1, throughput_lost: 0.2,
       margin_vs_uniform: $u1, margin_vs_per_gpu: $p1},
      {name: "capnet:alpha=0.55", family: "capnet", energy_saved: 0.0068, throughput_lost: -0.0048,
       margin_vs_uniform: $u5, margin_vs_per_gpu: $p5}]}'
}
mkdir -p "$tmp/caps"
caps_json caps-pretrain-a100x1 0.30 0 0 0 0 >"$tmp/caps/caps-caps-pretrain-a100x1.json"  # 30 %: met
caps_json caps-pretrain-a100x8 0.0087 0 0 0 0 >"$tmp/caps/caps-caps-pretrain-a100x8.json"
caps_json caps-pretrain-a100x64 0.0118 0 0 0 0 >"$tmp/caps/caps-caps-pretrain-a100x64.json"
caps_json caps-pipeline-imbalance-a100x8 0 0.04 0.01 0.006 0.02 >"$tmp/caps/caps-caps-pipeline-imbalance-a100x8.json"
caps_json caps-pipeline-imbalance-a100x64 0 0.06 -0.0003 0.007 0.01 >"$tmp/caps/caps-caps-pipeline-imbalance-a100x64.json"
caps_json caps-moe-imbalance-a100x8 0 0.045 0.02 -0.009 0.03 >"$tmp/caps/caps-caps-moe-imbalance-a100x8.json"
fake_bench() {  # REAL_NS CPU_NS: a stand-in for bench/capnet_bench's --benchmark_format=json
  printf '#!/bin/sh\necho '"'"'{"benchmarks": [{"name": "BM_CapNetDecide64_median", "aggregate_name": "median", "real_time": %s, "cpu_time": %s, "time_unit": "ns"}]}'"'"'\n' "$1" "$2" >"$tmp/bench"
  chmod +x "$tmp/bench"
}
fake_bench 42000 30000
check "caps_targets.sh runs" bash "$src/scripts/caps_targets.sh" "$tmp/caps" "$tmp/bench" >"$tmp/t.md"
check "a header and seven targets" test "$(grep -c "^| " "$tmp/t.md")" = 8
check "1 GPU at 30 % saved: met" grep -q '^| 1 GPU: ≥ 26.4 %.* 30 % at 0.98 % lost.* | met |$' "$tmp/t.md"
check "8 GPUs at 0.87 %: missed" grep -q '^| 8 GPUs: ≥ 20.1 %.*0.87 % at 0.98 % lost.*| \*\*missed\*\* |$' "$tmp/t.md"
check "capnet alpha 0.55 named beside another best arm" grep -q '(capnet α = 0.55: 0.68 % at -0.48 %)' "$tmp/t.md"
# vs uniform: alpha 0.10 positive everywhere, 0.55 negative on pipeline 64 -> met at {0.10} only.
check "vs uniform: the alphas positive in every scenario" grep -q 'pipeline 64: α 0.10 +6.00, α 0.55 −0.03.*| met at α ∈ {0.10} |$' "$tmp/t.md"
# vs per-GPU: 0.10 negative on MoE, 0.55 positive everywhere -> {0.55}.
check "vs per-GPU: the alphas positive in every scenario" grep -q 'MoE 8: α 0.10 −0.90, α 0.55 +3.00 | met at α ∈ {0.55} |$' "$tmp/t.md"
check "decide 42 us wall: met" grep -q '^| decide for 64 GPUs ≤ 50 µs | 42 µs wall, 30 µs CPU.*| met (CPU: met) |$' "$tmp/t.md"
check "training times from the shipped logs" grep -q '^| training ≤ 10 min on 2 cores | [0-9]*–[0-9]* s per α ([0-9]* shipped policies' "$tmp/t.md"
fake_bench 61000 30000
check "decide 61 us wall: missed on wall" sh -c "bash '$src/scripts/caps_targets.sh' '$tmp/caps' '$tmp/bench' | grep -q '61 µs wall.*| \*\*missed\*\* on wall time (CPU: met) |$'"
rm "$tmp/caps/caps-caps-moe-imbalance-a100x8.json"
bash "$src/scripts/caps_targets.sh" "$tmp/caps" "$tmp/bench" >/dev/null 2>"$tmp/e"; rc=$?
check "caps_targets.sh: a missing JSON is exit 1" test "$rc" = 1
check "... naming it" grep -q "caps-caps-moe-imbalance-a100x8.json missing" "$tmp/e"
bash "$src/scripts/caps_targets.sh" "$tmp/nowhere" "$tmp/bench" >/dev/null 2>&1; rc=$?
check "caps_targets.sh: no such directory is exit 2" test "$rc" = 2

bash "$src/scripts/fleet_sim_table.sh" --nodes x "$bin" >/dev/null 2>&1; rc=$?
check "fleet_sim_table.sh: --nodes x is exit 2" test "$rc" = 2
bash "$src/scripts/fleet_sim_table.sh" --bogus 1 "$bin" >/dev/null 2>&1; rc=$?
check "fleet_sim_table.sh: an unknown flag is exit 2" test "$rc" = 2
FLEXWATT_ETCD="$tmp/no-etcd" bash "$src/scripts/fleet_sim_table.sh" --nodes 2 --duration-s 5 "$bin" \
  >"$tmp/o" 2>"$tmp/e"; rc=$?
check "fleet_sim_table.sh: no etcd is exit 1" test "$rc" = 1
python3 "$src/scripts/calib_table.py" "$bin" >/dev/null 2>&1; rc=$?
check "calib_table.py: a missing argument is exit 2" test "$rc" = 2
printf '#!/bin/sh\necho "[calib] grpo-7b shipped scenario: worst tumbling 30 s mean 320.0 W"\n' >"$tmp/fake_sim"
chmod +x "$tmp/fake_sim"
python3 "$src/scripts/calib_table.py" "$bin" "$tmp/fake_sim" "$src" >"$tmp/calib.md" 2>"$tmp/calib.err"; rc=$?
check "calib_table.py: a test_sim without the [calib] lines it needs is exit 1" test "$rc" = 1
check "calib_table.py: and names the line it missed" grep -q 'no \[calib\] line matches' "$tmp/calib.err"
bash "$src/scripts/fleet_faults_table.sh" x >/dev/null 2>&1; rc=$?
check "fleet_faults_table.sh: AGENTS x is exit 2" test "$rc" = 2
bash "$src/scripts/fleet_faults_table.sh" 4 5 >/dev/null 2>&1; rc=$?
check "fleet_faults_table.sh: two arguments is exit 2" test "$rc" = 2
FLEXWATT="$bin" FLEXWATT_ETCD="$tmp/no-etcd" bash "$src/scripts/fleet_faults_table.sh" 2 \
  >"$tmp/ff.md" 2>/dev/null; rc=$?
check "fleet_faults_table.sh: no etcd is exit 1, nothing on stdout" test "$rc" = 1 -a ! -s "$tmp/ff.md"
check "... saying so, and no table" sh -c "grep -q 'not found' '$tmp/e' && ! grep -q '^|' '$tmp/o'"
bash "$src/scripts/bench_table.sh" "$bin" >/dev/null 2>&1; rc=$?
check "bench_table.sh: a missing argument is exit 2" test "$rc" = 2
# fleet_scale_table.py on a canned fleet-sim report and fleet_split_bench JSON: rates per node,
# the estimate's columns by its formulas; bad input exit 2, a missing file exit 1.
cat >"$tmp/report.json" <<'EOF'
{"nodes": 64, "duration_s": 300, "realloc_latency_s": {"count": 77, "p50": 0.020, "p99": 0.092},
 "etcd_writes_per_s": {"assignment_keys": 64.0, "coordinator_txns": 1.25, "node_registrations": 32.0}}
EOF
{
  printf '{"context": {"num_cpus": 2, "load_avg": [1.5]}, "benchmarks": ['
  for i in 0 1 2 3; do
    for n in 1000 10000; do
      printf '{"name": "BM_Split/%s/%s_median", "run_name": "BM_Split/%s/%s", "aggregate_name": "median", "real_time": 99, "cpu_time": %s, "time_unit": "ms"},' \
        "$i" "$n" "$i" "$n" "$((n / 1000))"
    done
  done
  printf '{"name": "BM_DecodeNodes/10000_median", "run_name": "BM_DecodeNodes/10000", "aggregate_name": "median", "real_time": 99, "cpu_time": 50, "time_unit": "ms"}]}'
} >"$tmp/split.json"
check "fleet_scale_table.py runs" python3 "$src/scripts/fleet_scale_table.py" "$tmp/report.json" "$tmp/split.json" >"$tmp/scale.md"
check "per node: 32/s over 64 nodes is 0.5/s" grep -q '^| registration puts | 0.50/s (32.0/s for 64) |' "$tmp/scale.md"
check "decode 50 ms for 10,000 records: 5 us each" grep -q 'decoding a record 5.0 µs (200,000 records/s)' "$tmp/scale.md"
# 10,000 nodes: 1 key/s each -> 10,000/s in >= 78 txns of 128; round = 1.8 * 10000 / 64 (281) +
# 50 + 10 (greedy at 10,000) + ceil(10000 / 64) * 7.7 (1209) = 1550 ms: 1,600 at two digits.
check "10,000 nodes: the rates times the count" grep -q '^| registration puts | 32.0/s | 250/s | 500/s | 5,000/s |$' "$tmp/scale.md"
check "10,000 nodes: assignment keys in txns of 128" grep -q '| 10,000/s in ≥ 78 txns/s |$' "$tmp/scale.md"
check "10,000 nodes: the round's four terms and their sum" grep -q '| 280 + 50 + 10 + 1,200 ≈ \*\*1,600 ms\*\* |$' "$tmp/scale.md"
check "64 nodes: the measured round beside its estimate" grep -q '| p50 20 ms (estimate ' "$tmp/scale.md"
python3 "$src/scripts/fleet_scale_table.py" "$tmp/report.json" >/dev/null 2>&1; rc=$?
check "fleet_scale_table.py: one argument is exit 2" test "$rc" = 2
python3 "$src/scripts/fleet_scale_table.py" "$tmp/nowhere.json" "$tmp/split.json" >/dev/null 2>&1; rc=$?
check "fleet_scale_table.py: a missing report is exit 1" test "$rc" = 1
jq 'del(.etcd_writes_per_s.assignment_keys)' "$tmp/report.json" >"$tmp/report-bad.json"
python3 "$src/scripts/fleet_scale_table.py" "$tmp/report-bad.json" "$tmp/split.json" >"$tmp/o" 2>"$tmp/e"; rc=$?
check "fleet_scale_table.py: a report without a field is exit 2" test "$rc" = 2
check "... naming the file and the field" grep -q 'report-bad.json: field etcd_writes_per_s.assignment_keys missing' "$tmp/e"
echo '{"benchmarks": []}' >"$tmp/split-bad.json"
python3 "$src/scripts/fleet_scale_table.py" "$tmp/report.json" "$tmp/split-bad.json" >/dev/null 2>"$tmp/e"; rc=$?
check "fleet_scale_table.py: a bench without BM_Split is exit 2, naming it" sh -c "test $rc = 2 && grep -q 'no benchmark BM_Split/0/1000' '$tmp/e'"
# caps_adapt_table.sh on canned caps JSONs: capnet's range over alpha 0.1-0.5 (0.1-0.3 on 64
# GPUs; 0.55 and 1.0 never in it), the per-GPU static points' margin over uniform, the changed
# cases bold; a missing JSON exit 1, not a directory exit 2.
adapt_json() {  # U01 P01 U05 P05 PG1 PG2: capnet alpha 0.1 and 0.5 margins, two per-GPU points
  jq -n --argjson u1 "$1" --argjson p1 "$2" --argjson u5 "$3" --argjson p5 "$4" --argjson g1 "$5" --argjson g2 "$6" '
    {arms: [{name: "uncapped", family: "uncapped", margin_vs_uniform: 0, margin_vs_per_gpu: 0},
      {name: "per-gpu:r=0.97", family: "per-gpu", margin_vs_uniform: $g1, margin_vs_per_gpu: 0},
      {name: "per-gpu:r=0.94", family: "per-gpu", margin_vs_uniform: $g2, margin_vs_per_gpu: 0},
      {name: "capnet:alpha=0.10", family: "capnet", margin_vs_uniform: $u1, margin_vs_per_gpu: $p1},
      {name: "capnet:alpha=0.50", family: "capnet", margin_vs_uniform: $u5, margin_vs_per_gpu: $p5},
      {name: "capnet:alpha=0.55", family: "capnet", margin_vs_uniform: -0.5, margin_vs_per_gpu: -0.5},
      {name: "capnet:alpha=1.00", family: "capnet", margin_vs_uniform: 0, margin_vs_per_gpu: 0}]}'
}
mkdir -p "$tmp/adapt"
adapt_json 0.038 0.006 0.048 0.021 0.005 0.035 >"$tmp/adapt/caps-caps-pipeline-imbalance-a100x8.json"
adapt_json 0.042 0.031 0.037 0.0365 -0.012 0.012 >"$tmp/adapt/caps-caps-adapt-pipeline-a100x8.json"
adapt_json 0.023 0.023 0.033 0.035 -0.012 -0.001 >"$tmp/adapt/caps-caps-adapt-balanced-to-0.4-a100x8.json"
adapt_json 0.046 0.007 -0.004 -0.003 0.013 0.054 >"$tmp/adapt/caps-caps-pipeline-imbalance-a100x64.json"
adapt_json 0.041 0.045 -0.004 -0.003 -0.04 -0.008 >"$tmp/adapt/caps-caps-adapt-pipeline-a100x64.json"
check "caps_adapt_table.sh runs" bash "$src/scripts/caps_adapt_table.sh" "$tmp/adapt" >"$tmp/adapt.md"
check "a header and five cases" test "$(grep -c '^| ' "$tmp/adapt.md")" = 6
check "8 GPUs, no change: ranges over alpha 0.1-0.5, 0.55 and 1.0 left out" grep -q '^| 8 GPUs, 0.3, no change .* | +3.8 to +4.8 | +0.6 to +2.1 | +0.5 to +3.5 |$' "$tmp/adapt.md"
check "8 GPUs redrawn: the per-GPU margin bold, 3.65 points shown +3.7" grep -q '^| 8 GPUs, 0.3 redrawn .* | +3.7 to +4.2 | \*\*+3.1 to +3.7\*\* | −1.2 to +1.2 |$' "$tmp/adapt.md"
check "64 GPUs: alpha <= 0.3 only (0.5's negative margins out)" grep -q '^| 64 GPUs, 0.3 redrawn at 600 s | +4.1 to +4.1 (α ≤ 0.3) | \*\*+4.5 to +4.5\*\* (α ≤ 0.3) | −4.0 to −0.8 |$' "$tmp/adapt.md"
rm "$tmp/adapt/caps-caps-adapt-pipeline-a100x64.json"
bash "$src/scripts/caps_adapt_table.sh" "$tmp/adapt" >/dev/null 2>"$tmp/e"; rc=$?
check "caps_adapt_table.sh: a missing JSON is exit 1, naming it" sh -c "test $rc = 1 && grep -q 'caps-caps-adapt-pipeline-a100x64.json missing' '$tmp/e'"
bash "$src/scripts/caps_adapt_table.sh" "$tmp/nowhere" >/dev/null 2>&1; rc=$?
check "caps_adapt_table.sh: no such directory is exit 2" test "$rc" = 2
# parse_floor_table.sh on a canned bench/analyze_vs_pandas.py output and BM_AnalysisOnly JSON.
cat >"$tmp/bench-out.txt" <<'EOF'
trace: /tmp/flexwatt_bench/10000000/gpus.csv (10000000 rows, 599 MB), budget 4400.0 W on the node; 2 CPUs, load average before 1.40 1.00 0.90
flexwatt analyze (default):        0.280 s    35.71 M rows/s  CPU 0.527 s
pandas:                            1.954 s     5.12 M rows/s  CPU 1.900 s
parse floor, one thread, 10000000 rows (1 lines not taken), best of 3:
  split only (no power/energy conversion): 0.098 s    9.8 ns/row
  split + scalar conversion (the reader's): 0.212 s   21.2 ns/row
  split + 8-digit SWAR conversion:          0.269 s   26.9 ns/row
  scalar and SWAR columns identical: yes
EOF
echo '{"benchmarks": [{"name": "BM_AnalysisOnly/iterations:3/real_time", "run_name": "BM_AnalysisOnly/iterations:3/real_time", "real_time": 158.0, "time_unit": "ms"}]}' >"$tmp/ao.json"
check "parse_floor_table.sh runs" bash "$src/scripts/parse_floor_table.sh" "$tmp/bench-out.txt" "$tmp/ao.json" >"$tmp/floor.md"
check "the scalar conversion row" grep -q "^| split + the reader's number conversion | 0.212 s (21.2 ns a row) |$" "$tmp/floor.md"
check "the SWAR row says whether its columns were identical" grep -q '^| split + an 8-digit SWAR conversion (same values, checked: yes) | 0.269 s (26.9 ns a row) |$' "$tmp/floor.md"
check "the analysis alone: 158 ms over 10 M rows is 15.8 ns a row" grep -q '^| the analysis alone (`BM_AnalysisOnly`) | 0.158 s (15.8 ns a row) |$' "$tmp/floor.md"
check "analyze's and pandas' CPU" sh -c "grep -q '| 0.527 s (two threads) |\$' '$tmp/floor.md' && grep -q '^| pandas, CPU (wall) | 1.900 s (1.954 s) |\$' '$tmp/floor.md'"
grep -v '^  split + 8-digit' "$tmp/bench-out.txt" >"$tmp/bench-out-bad.txt"
bash "$src/scripts/parse_floor_table.sh" "$tmp/bench-out-bad.txt" "$tmp/ao.json" >/dev/null 2>"$tmp/e"; rc=$?
check "parse_floor_table.sh: an output without the SWAR line is exit 2, naming it" sh -c "test $rc = 2 && grep -q 'no line .split + 8-digit SWAR' '$tmp/e'"
bash "$src/scripts/parse_floor_table.sh" "$tmp/bench-out.txt" "$tmp/nowhere.json" >/dev/null 2>&1; rc=$?
check "parse_floor_table.sh: a missing JSON is exit 1" test "$rc" = 1
# bench_timings.py on canned Google Benchmark / agent_bench / eval JSON.
gb() {  # NAME REAL CPU UNIT [LABEL]...: one benchmarks array entry per 4 or 5 fields
  printf '{"name": "%s", "run_name": "%s", "real_time": %s, "cpu_time": %s, "time_unit": "%s", "label": "%s"}' "$1" "$1" "$2" "$3" "$4" "${5:-}"
}
printf '{"context": {"load_avg": [3.5], "num_cpus": 2}, "benchmarks": [%s, %s, %s]}' \
  "$(gb BM_MpcDecision 0.3 0.29 us)" "$(gb BM_MpcRefit 11 11 us)" "$(gb BM_MpcReplan/iterations:5 168 160 ms)" >"$tmp/mpc.json"
check "bench_timings.py mpc runs" python3 "$src/scripts/bench_timings.py" mpc "$tmp/mpc.json" >"$tmp/mpc.md"
check "mpc: the replan, and amortised over 1200 decisions (168 ms / 1200 + 0.3 us = 140 us)" sh -c \
  "grep -q '^| a whole replan (refit and search) | 168 ms | 160 ms |\$' '$tmp/mpc.md' && grep -q '| 140 µs | 134 µs |\$' '$tmp/mpc.md'"
check "mpc: the load average stated" grep -q 'load average 3.50, 2 CPUs' "$tmp/mpc.md"
printf '{"benchmarks": [%s, %s]}' "$(gb BM_Allocate/4/1 155 150 us 'optimal concave (100 jobs, 30 % cut)')" \
  "$(gb BM_Allocate/4/0 1100 1000 us 'optimal non-concave (100 jobs, 30 % cut)')" >"$tmp/alloc.json"
check "bench_timings.py allocation: one row per method, both curve kinds" sh -c \
  "python3 '$src/scripts/bench_timings.py' allocation '$tmp/alloc.json' | grep -q '^| optimal | 155 µs | 1.1 ms | 150 µs / 1 ms | met |\$'"
printf '{"benchmarks": [%s, %s]}' "$(gb BM_CapNetDecide64 67800 60000 ns)" "$(gb BM_CapNetOnlineDecide64 7000 2200 ns)" >"$tmp/capnet.json"
check "bench_timings.py capnet: the target judged on CPU (60 us: missed, 2.2 us: met)" sh -c \
  "python3 '$src/scripts/bench_timings.py' capnet '$tmp/capnet.json' >'$tmp/capnet.md' && grep -q '| 67.8 µs | 60 µs | \*\*missed\*\* |\$' '$tmp/capnet.md' && grep -q '| 7 µs | 2.2 µs | met |\$' '$tmp/capnet.md'"
jq -n '{load_avg: 2.0, clients: {clients: 8, seconds: 3, endpoints: [{endpoint: "GET /v1/status", requests_per_s: 61799.4, p50_ms: 0.116, p99_ms: 0.427, max_ms: 3, errors: 0}]},
  slowloris: {idle_connections: 40, trickling_connections: 40, seconds: 20, probes: 397, probes_ok: 397, probes_failed: 0, probe_p50_ms: 0.2, probe_p99_ms: 3.2, probe_max_ms: 5.2}}' >"$tmp/agent.json"
check "bench_timings.py agent: the endpoint and the slowloris rows" sh -c \
  "python3 '$src/scripts/bench_timings.py' agent '$tmp/agent.json' >'$tmp/agent.md' && grep -q '^| GET /v1/status | 61,799 | 0.116 | 0.427 | 3.000 | 0 |\$' '$tmp/agent.md' && grep -q '^| 40 + 40 | 397 | 397 | 0 | 0.2 | 3.2 | 5.2 |\$' '$tmp/agent.md'"
jq -n '{load_avg: 2.0, runs: [{spec: "lookahead", wall_s: 45.3, cpu_s: 44.31, eval: {controllers: [{progress: {completed_step_tokens: {mean: 143880.4}}, violation_rate_offsets: {rate: {mean: 0.0474}}}]}}]}' >"$tmp/la.json"
check "bench_timings.py lookahead: wall, CPU, tokens, violations" sh -c \
  "python3 '$src/scripts/bench_timings.py' lookahead '$tmp/la.json' | grep -q '^| \`lookahead\` | 45.3 s | 44.3 s | 143,880 | 4.74 % |\$'"
python3 "$src/scripts/bench_timings.py" bogus "$tmp/mpc.json" >/dev/null 2>&1; rc=$?
check "bench_timings.py: an unknown KIND is exit 2" test "$rc" = 2
python3 "$src/scripts/bench_timings.py" mpc "$tmp/nowhere.json" >/dev/null 2>&1; rc=$?
check "bench_timings.py: a missing JSON is exit 1" test "$rc" = 1
printf '{"benchmarks": [%s]}' "$(gb BM_MpcDecision 0.3 0.29 us)" >"$tmp/mpc-bad.json"
python3 "$src/scripts/bench_timings.py" mpc "$tmp/mpc-bad.json" >/dev/null 2>"$tmp/e"; rc=$?
check "bench_timings.py: a bench without BM_MpcRefit is exit 2, naming it" sh -c "test $rc = 2 && grep -q 'no benchmark BM_MpcRefit' '$tmp/e'"
# results_summary.py on the repository's docs/results.md: one table per scenario, every row
# against its reference; a missing file exit 1, two arguments exit 2.
check "results_summary.py reads docs/results.md" python3 "$src/scripts/results_summary.py" "$src/docs/results.md" >"$tmp/summary.md"
check "... with the fleet run's fleet row against its joint reference" grep -q '^| `fleet` | `static:knob=gen_concurrency+caps` |' "$tmp/summary.md"
python3 "$src/scripts/results_summary.py" "$tmp/nowhere.md" >/dev/null 2>&1; rc=$?
check "results_summary.py: a missing file is exit 1" test "$rc" = 1
python3 "$src/scripts/results_summary.py" a b >/dev/null 2>&1; rc=$?
check "results_summary.py: two arguments is exit 2" test "$rc" = 2
# capnet_training_table.py on two canned training logs: the best validation iteration (the
# first of equal scores), the iterations and the wall time; a bad number exit 2 naming the
# line, no log exit 1.
mkdir -p "$tmp/pol" "$tmp/nopol"
printf 'iteration,mean_reward,best_member_reward,validation,wall_s\n1,0,0,,1.5\n10,0,0,0.0100,12\n20,0,0,0.0300,24\n30,0,0,0.0300,36\n40,0,0,0.0200,47.6\n' >"$tmp/pol/capnet-a100-alpha0.2.train.csv"
printf 'iteration,mean_reward,best_member_reward,validation,wall_s\n10,0,0,0.0500,10\n' >"$tmp/pol/capnet-a100-alpha0.10.train.csv"
check "capnet_training_table.py runs" python3 "$src/scripts/capnet_training_table.py" "$tmp/pol" >"$tmp/ct.md"
check "the first best validation iteration, the iterations, the wall" grep -q '^| `capnet-a100-alpha0.2.json` | 0.2 | 20 | 0.0300 | 40 | 48 s |$' "$tmp/ct.md"
check "rows in the order of alpha" sh -c "grep '^| .capnet' '$tmp/ct.md' | head -1 | grep -q 'alpha0.10'"
printf 'iteration,mean_reward,best_member_reward,validation,wall_s\n1,0,0,x,1\n' >"$tmp/pol/capnet-a100-alpha0.3.train.csv"
python3 "$src/scripts/capnet_training_table.py" "$tmp/pol" >/dev/null 2>"$tmp/e"; rc=$?
check "capnet_training_table.py: a bad number is exit 2, naming the line" sh -c "test $rc = 2 && grep -q 'alpha0.3.train.csv:2:' '$tmp/e'"
python3 "$src/scripts/capnet_training_table.py" "$tmp/nopol" >/dev/null 2>&1; rc=$?
check "capnet_training_table.py: no log is exit 1" test "$rc" = 1
# authority_table.sh on a canned `flexwatt authority --json`: the swings, the ratio, the band.
jq -n '{scenario: "s", job_gpus: 4, seed: 1, duration_s: 1800, knobs: [
  {knob: "gen_concurrency", has_authority: true, mean_power_swing: 0.174, peak_window_swing: 0.201, peak_sample_swing: 0.011, throughput_ratio: 4.972, settings: [{value: 2}, {value: 16}]},
  {knob: "group_size", has_authority: false, mean_power_swing: 0.031, peak_window_swing: 0.028, peak_sample_swing: 0.019, throughput_ratio: 1.18, settings: [{value: 2}, {value: 16}]}]}' >"$tmp/auth.json"
check "authority_table.sh: a knob's range, swings, ratio and authority" sh -c \
  "bash '$src/scripts/authority_table.sh' '$tmp/auth.json' | grep -q '^| gen_concurrency (2..16) | 17.4 % | 20.1 % | 1.1 % | 4.97× | yes |\$'"
check "authority_table.sh: 17.4 % inside 15-25 %: met" sh -c \
  "bash '$src/scripts/authority_table.sh' '$tmp/auth.json' 0.15-0.25 | grep -q '^| gen_concurrency .* | yes | met |\$'"
check "authority_table.sh: outside 0.20-0.25: missed" sh -c \
  "bash '$src/scripts/authority_table.sh' '$tmp/auth.json' 0.20-0.25 | grep -q '| yes | \*\*missed\*\* |\$'"
bash "$src/scripts/authority_table.sh" "$tmp/auth.json" 15-25 >/dev/null 2>&1; rc=$?
check "authority_table.sh: a band in percent, not fractions, is exit 2" test "$rc" = 2
bash "$src/scripts/authority_table.sh" "$tmp/nowhere.json" >/dev/null 2>&1; rc=$?
check "authority_table.sh: a missing JSON is exit 1" test "$rc" = 1
# fit_cases_table.py on canned [fit-case] lines: the twin against the log in per cent (log first),
# the worst 'means above' error, the case's own figures; a case without its lines exit 2, no
# file exit 1.
{
  for c in aperiodic periodic "two pause populations" "rare long pauses" setup light; do
    echo "[fit-case] $c: mean 2000 vs 1980 W, p95 3000 vs 2991 W, peak30 3000 vs 3048 W"
    for b in 3000 3100; do
      for w in " 1" " 5" 30; do echo "[fit-case] $c: budget $b W, $w s means above: 0.100 vs 0.0${w// /}0"; done
    done
  done
  echo "[fit-case] aperiodic: max acf 1-5 s 0.30 vs 0.23; node sd 66.7 vs 62.5 W"
  echo "[fit-case] periodic: dominant period 3.00 vs 3.00 s"
  echo "[fit-case] rare long: 27 regular every 29.1 s, 17.1 s; 2 long, 110.5 s, every 412 s"
  echo "[fit-case] setup: span from 120 s, 27 low phases every 49.8 s"
  echo "[fit-case] light: 3 low phases"
  echo "[fit-case] mid-training start: every 38.8 s (true 40), jitter 0.039 (true 0.05)"
} >"$tmp/fit.txt"
check "fit_cases_table.py runs" python3 "$src/scripts/fit_cases_table.py" --from "$tmp/fit.txt" >"$tmp/fit.md"
# mean -1.0 %, p95 -0.3 %, peak +1.6 %; worst error |0.100 - 0.010| = 0.090 (the 1 s windows).
check "aperiodic: twin vs log, the worst error, acf and sd twin first" grep -q '^| aperiodic training .* | −1.0 % | −0.3 % | +1.6 % | 0.090 | max acf 1–5 s 0.23 (log 0.30), node sd 62.5 vs 66.7 W |$' "$tmp/fit.md"
check "two populations: no other column" grep -q '^| two populations: .* | 0.090 | |$' "$tmp/fit.md"
check "mid-training: the spacing and jitter" grep -q '| spacing 38.8 s (true 40), jitter 0.039 (true 0.05) |$' "$tmp/fit.md"
grep -v 'light: 3 low' "$tmp/fit.txt" >"$tmp/fit-bad.txt"
python3 "$src/scripts/fit_cases_table.py" --from "$tmp/fit-bad.txt" >/dev/null 2>"$tmp/e"; rc=$?
check "fit_cases_table.py: a case without its line is exit 2, naming it" sh -c "test $rc = 2 && grep -q \"case 'light'\" '$tmp/e'"
python3 "$src/scripts/fit_cases_table.py" --from "$tmp/nowhere.txt" >/dev/null 2>&1; rc=$?
check "fit_cases_table.py: a missing file is exit 1" test "$rc" = 1
# dr_tables.sh with a stand-in flexwatt whose replays print canned scores: the verdicts follow
# them (an over-cut of 3 % is missed, a 0.95 performance met); bad usage exit 2, a missing
# data file exit 1. site_loop_sim_table.sh on a stand-in test binary's canned lines.
mkdir -p "$tmp/drdata" "$tmp/drout"
for f in aps_job_power_w.csv aps_projection_w.csv caiso_reenactment_total_w.csv; do echo "timestamp,total" >"$tmp/drdata/$f"; done
cat >"$tmp/fakefw" <<'FW'
#!/bin/sh
jq -n '{minutes_above_target: 0, mean_overcut_frac: 0.03, ramp_down_s: 60, all_jobs_at_tier: true,
  weighted_performance: 0.95, projected_vs_measured_rmse_frac: 0.04, vs_measured: {event_rmse_frac: 0.05},
  measured: {minutes_above_target: 0, mean_overcut_frac: 0.1, ramp_down_s: 318},
  field_vs_measured: {rmse_frac: 0.04}, field_vs_measured_at_row_time: {rmse_frac: 0.047},
  per_job: [{name: "ft", performance: 0.97, tier_min: 0.75}],
  plant_model_check: {projected_vs_measured_rmse_frac: 0.0267, event_rmse_frac: 0.03}}'
FW
chmod +x "$tmp/fakefw"
check "dr_tables.sh runs" bash "$src/scripts/dr_tables.sh" "$tmp/fakefw" "$tmp/drdata" "$tmp/drout"
check "dr_tables.sh: a 3 % over-cut is missed" grep -q '^| mean over-cut ≤ 2 % of baseline | \*\*3 %\*\* .* | \*\*missed\*\* |$' "$tmp/drout/dr-targets.md"
check "dr_tables.sh: the plant-model check, 2.67 %, met" grep -q "^| plant-model check: .* | \*\*2.67 %\*\* (event only 3 %) | .* | APS met as a plant check" "$tmp/drout/dr-targets.md"
check "dr_tables.sh: performance 0.95 is met" grep -q '^| weighted performance ≥ 0.94 | \*\*0.95\*\* .* | met |$' "$tmp/drout/dr-targets.md"
check "dr_tables.sh: a header and 15 variants" test "$(grep -c "^| " "$tmp/drout/dr-variants.md")" = 16
bash "$src/scripts/dr_tables.sh" "$tmp/fakefw" "$tmp/drdata" >/dev/null 2>&1; rc=$?
check "dr_tables.sh: bad usage is exit 2" test "$rc" = 2
rm "$tmp/drdata/aps_projection_w.csv"
bash "$src/scripts/dr_tables.sh" "$tmp/fakefw" "$tmp/drdata" "$tmp/drout" >/dev/null 2>&1; rc=$?
check "dr_tables.sh: a missing data file is exit 1" test "$rc" = 1
cat >"$tmp/fakesls" <<'SLS'
#!/bin/sh
for a in "0, curves 0" "1, curves 0" "1, curves 1"; do
  echo "[site-loop-sim] simulated, 64 nodes, loop $a: {\"mean_overcut_frac\":0.0221,\"mean_overcut_1min_frac\":0.0066} performance 0.9067 hold 0.8"
done
SLS
chmod +x "$tmp/fakesls"
check "site_loop_sim_table.sh runs" bash "$src/scripts/site_loop_sim_table.sh" "$tmp/fakesls" "$tmp/sls.md"
check "site_loop_sim_table.sh: per tick / per minute in per cent, per seed" grep -q '^| integral only (no curves) | 2.21 / 0.66 % | 2.21 / 0.66 % | 2.21 / 0.66 % | 2.21 / 0.66 % | 0.907–0.907 |$' "$tmp/sls.md"
printf '#!/bin/sh\necho nothing\n' >"$tmp/fakesls"
bash "$src/scripts/site_loop_sim_table.sh" "$tmp/fakesls" "$tmp/sls.md" >/dev/null 2>&1; rc=$?
check "site_loop_sim_table.sh: no lines is exit 1" test "$rc" = 1
bash "$src/scripts/site_loop_sim_table.sh" "$tmp/fakesls" >/dev/null 2>&1; rc=$?
check "site_loop_sim_table.sh: bad usage is exit 2" test "$rc" = 2
# pipeline_validate_table.py on two canned validate outputs: the stage counts from the rows'
# caps, the rows within 5 % per term, both models side by side, the profiled split (rows inside
# the calibrated range, flagged, not profiled); JSON without sets or without the profiled fields
# exit 2, no file exit 1.
pv_json() {  # WITHIN ERR: one A100-PCIe set of three 4-stage rows (the third outside the range)
  jq -n --argjson w "$1" --argjson e "$2" '{sets: [{gpu: "a100-pcie-80gb", within: $w, split_rows: 2, split_within: 1,
    fits: [{model: "m1", uniform_max_err: 0.004}, {model: "m2", uniform_max_err: 0.01}],
    profiled_fits: [{model: "m1", uniform_max_err: 0.02, calibrated_range_w: [175, 300]},
                    {model: "m2", uniform_max_err: 0.031, calibrated_range_w: [175, 300]}],
    profiled_rows: 2, profiled_within: 1, outside_calibrated_range: 1, not_profiled: 0,
    rows: [{caps_w: [300, 300, 250, 200], time_err: 0.01, energy_err: $e,
            profiled: {status: "predicted", time_err: 0.02, energy_err: -0.01, within: true}},
           {caps_w: [300, 200, 200, 200], time_err: -0.2, energy_err: 0.03,
            profiled: {status: "predicted", time_err: 0.09, energy_err: 0.01, within: false}},
           {caps_w: [300, 200, 200, 150], time_err: 0.3, energy_err: 0.1,
            profiled: {status: "outside_calibrated_range"}}]}]}'
}
pv_json 1 -0.06 >"$tmp/pv.json"
pv_json 0 0.02 | jq 'del(.sets[0].split_rows)' >"$tmp/pvg.json"
check "pipeline_validate_table.py runs" python3 "$src/scripts/pipeline_validate_table.py" "$tmp/pv.json" "$tmp/pvg.json" "$tmp"
check "pipeline_validate_table.py: the GPU model's rows per term and largest errors" grep -q '^| A100-PCIe, 4 stages (`a100-pcie-80gb`) | 0.4–1.0 % | \*\*0 of 3\*\* (time 1, energy 2) | time 30.0 %, energy 10.0 % |$' "$tmp/pipeline-validate-gpu-model.md"
check "pipeline_validate_table.py: both models and the split diagnostic" grep -q '^| A100-PCIe, 4 stages | 0.4–1.0 %, largest m2 (GPU model: 0.4–1.0 %) | \*\*1 of 3\*\* (GPU model: 0 of 3) | 1 of 2 |$' "$tmp/pipeline-validate.md"
check "pipeline_validate_table.py: the profiled split, flagged rows apart" grep -q '^| A100-PCIe, 4 stages | 2.0–3.1 %, largest m2 | 175–300 W | \*\*1 of 2\*\* (time 1, energy 2) | 1 | 0 | time 9.0 %, energy 1.0 % |$' "$tmp/pipeline-validate-profiled.md"
jq 'del(.sets[0].profiled_rows)' "$tmp/pv.json" >"$tmp/pvnoprof.json"
python3 "$src/scripts/pipeline_validate_table.py" "$tmp/pvnoprof.json" "$tmp/pvg.json" "$tmp" >/dev/null 2>&1; rc=$?
check "pipeline_validate_table.py: JSON without the profiled split is exit 2" test "$rc" = 2
echo '{"rows": []}' >"$tmp/pvbad.json"
python3 "$src/scripts/pipeline_validate_table.py" "$tmp/pvbad.json" "$tmp/pvg.json" "$tmp" >/dev/null 2>&1; rc=$?
check "pipeline_validate_table.py: JSON without sets is exit 2" test "$rc" = 2
python3 "$src/scripts/pipeline_validate_table.py" "$tmp/nowhere.json" "$tmp/pvg.json" "$tmp" >/dev/null 2>&1; rc=$?
check "pipeline_validate_table.py: a missing file is exit 1" test "$rc" = 1
# pipeline_table.sh on a stand-in `pipeline plan --json` (Perseus's set-up, --allow-above-max:
# one-op segments and 450 W caps, the search stopped; the defaults: 2.5 s segments and 250 W caps,
# optimal; saving 30 % of a bound of 32 %, shares of Perseus above 100 %): the realisable and the set-up tables, each cell's shares of Perseus and of
# the bound, the summary lines, every table row within 120 columns; a JSON without a field the
# script reads stops it.
cat >"$tmp/fakeplan" <<'FP'
#!/bin/sh
above=0 strag=1 prev=
for a in "$@"; do
  [ "$a" = --allow-above-max ] && above=1
  [ "$prev" = --straggler-factor ] && strag=$a
  prev=$a
done
jq -n --argjson a "$above" --argjson f "$strag" --arg drop "${FAKE_DROP:-}" '
  {energy_saved: 0.30, time_increase: 0, bound_energy_saved: 0.32, optimal: ($a == 0),
   shortest_segment_s: (if $a == 1 then 0.05 else 2.5 end),
   segments: [[{cap_w: (if $a == 1 then 450 else 250 end), forward_mhz: 1000, backward_mhz: 1000},
               {cap_w: null, forward_mhz: 1410, backward_mhz: 1410}]]}
  + (if $f > 1 then {others: [{stage: 0, fill: {cap_w: 200}, warmup: null}]} else {} end)
  | del(.[$drop]) as $m
  | {schedule: $m, constant: ($m | .energy_saved = 0.05), planning_cpu_s: 0.5}'
FP
chmod +x "$tmp/fakeplan"
within_120() {  # FILE: every table row at most 120 characters
  local LC_ALL=C.UTF-8 l
  while IFS= read -r l; do case $l in '|'*) [ "${#l}" -le 120 ] || return 1 ;; esac; done <"$1"
}
check "pipeline_table.sh --perseus runs" sh -c "bash '$src/scripts/pipeline_table.sh' --perseus '$tmp/fakeplan' >'$tmp/pp.md'"
check "pipeline_table.sh: two tables of 20 rows" test "$(grep -c '^| [GB]' "$tmp/pp.md")" = 40
check "pipeline_table.sh: realisable, shares of Perseus and of the bound, optimal, segments" grep -qF \
  '| GPT-3 A100 | 12 | 1 | −15.20 % | −30.00 % (197 % / opt.) | −17.20 % | −30.00 % (174 % / opt.) | 2.50, 2.50 |' "$tmp/pp.md"
check "pipeline_table.sh: Perseus's set-up" grep -qF \
  '| Bloom A40 | 96 | 1.2 | −21.09 % | −30.00 % (142 % / 94 %) | −22.63 % | −30.00 % (133 % / 94 %) |' "$tmp/pp.md"
check "pipeline_table.sh: the summary lines" test "$(grep -cE '^(Realisable at|In Perseus.s set-up at|Straggler rows|Segments|Planning CPU)' "$tmp/pp.md")" = 7
check "pipeline_table.sh: segments and caps from the JSON" grep -q 'realisable 2.50 s on the A100 profiles (20 of 20 plans).*in Perseus.s set-up 0.050 s on the A100.*Largest cap: realisable 250 W on the A100 plans and 250 W on the A40 ones (0 of 40 above.*450 W on the A40 ones (20 of 20 above 300 W)' "$tmp/pp.md"
check "pipeline_table.sh: the comparison's rows within 120 columns" within_120 "$tmp/pp.md"
check "pipeline_table.sh (one table) runs" sh -c "bash '$src/scripts/pipeline_table.sh' '$tmp/fakeplan' 0 >'$tmp/p0.md'"
check "pipeline_table.sh: constant and schedule at equal time" grep -qF \
  '| GPT-3 A100 | 12 | 1 | −15.20 % | −5.00 % (+0.00 %) | −30.00 % (+0.00 %) | 197 % / opt. | 0.500 |' "$tmp/p0.md"
check "pipeline_table.sh: one table's rows within 120 columns" within_120 "$tmp/p0.md"
FAKE_DROP=shortest_segment_s bash "$src/scripts/pipeline_table.sh" --perseus "$tmp/fakeplan" >/dev/null 2>"$tmp/e"; rc=$?
check "pipeline_table.sh: a JSON without shortest_segment_s stops it" sh -c "test $rc != 0 && grep -q 'has no shortest_segment_s' '$tmp/e'"
finish results_tables
