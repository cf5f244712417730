#!/usr/bin/env bash
# `make results`: runs every command behind the README's results table and the docs' tables on
# fixed seeds (evaluation seeds 1..5; the policies were selected on other seeds) and writes the
# tables: docs/results.md (each command and its table), the README's headline table between its
# results markers, and each doc's tables between its `<!-- results:NAME:begin -->` /
# `<!-- results:NAME:end -->` markers. Every figure is simulated. Not part of `make test`.
#
# The work is cut into named blocks, run in the order below (`scripts/results.sh --list`: each
# block, whether plain `make results` runs it or only `make results-all`, the markers it writes
# and the blocks whose outputs it reads). A block runs its commands, then splices its own
# markers and no others; docs/results.md holds one marker section per block that writes there
# (its header, above the first marker, is rewritten by each run that regenerates a block; the
# comment at the top of each section names the commit and binary that wrote it).
#
# Cache: a finished block is kept in .results-cache/NAME/KEY/ (its outputs and spliced tables).
# KEY = sha256 of: the binary (FLEXWATT_BIN) and every other binary the block runs (build/tests/*,
# build/bench/*), the text of the block's function and of every function and setting of this
# script it uses, the input files and directories it names (scenarios/, policies/, data/,
# ../shared/data/..., its helper scripts) and the outputs of the blocks it reads. A block whose
# key is cached is re-spliced from the cache without running ("cached"); an entry is written
# only when its block has finished (a staging directory, then a rename), so an interrupted run
# resumes at the block it stopped in. FORCE=1 (--force) runs the selected blocks again. A
# failed block stops the run naming its log (.results-cache/logs/NAME.log); the blocks done
# before it stay spliced. Each block's wall time is printed, summed up at the end and appended
# to .results-cache/timings.tsv.
#   make results [BLOCK=NAME[,NAME...]] [FORCE=1]      the plain blocks in order, or the ones
#                                                    named (with the blocks they read: cached,
#                                                    else run first)
#   make results-all [BLOCK=...] [FORCE=1]            every block, the slow ones too
# Usage: scripts/results.sh [--all] [--block NAME[,NAME...]] [--force] [FLEXWATT_BIN]
#        scripts/results.sh --list
# Exit 2 on bad usage (e.g. an unknown block), 1 when a block fails.
set -eu
cd "$(dirname "$0")/.."
root=$PWD

usage() { sed -n '/^# Usage:/,/^# Exit/p' "$0" | sed 's/^# \{0,1\}//'; }
usage_error() { echo "results: $*" >&2; usage >&2; exit 2; }
all=0 list=0 force=0 sel=""
case ${FORCE:-} in '' | 0) ;; *) force=1 ;; esac
while [ $# -gt 0 ]; do
  case $1 in
    --all) all=1 ;;
    --list) list=1 ;;
    --force) force=1 ;;
    --block) [ $# -ge 2 ] || usage_error "--block needs a block name"; sel=$2; shift ;;
    --block=*) sel=${1#--block=} ;;
    -h | --help) usage; exit 0 ;;
    -*) usage_error "unknown option '$1'" ;;
    *) break ;;
  esac
  shift
done
[ $# -le 1 ] || usage_error "one FLEXWATT_BIN at most"
bin=${1:-build/flexwatt}
bindir=$(dirname "$bin")

# ---- settings (every block's key holds the ones its functions name) ----
config_before=$(compgen -v | LC_ALL=C sort)
P7=policies/grpo-7b-a100.json
K7=policies/grpo-7b-a100-knobs.json
P72=policies/grpo-72b-a100x4.json
# The input files of every simulation (hashed into the keys of the blocks that simulate).
SIM_INPUTS="scenarios policies data"
# The 7B static-cap recipe (knobs pinned at the top, the cap calibrated): one point of the
# joint grid, listed beside the joint reference.
CAPPIN=static:knob=caps,group_size=16,gen_concurrency=64
# Every run uses --reference auto: each row against the joint static over the actuators its
# controller claims (Controller::claims(); uncontrolled claims none and gets plain `static`,
# every actuator), calibrated on seeds 1000001-1000002 and safe on every trailing window there;
# a reference not listed is added as a row. The unannounced drop runs with the budget shield on
# every row, acting on the caps (--shield-on-caps), and again with the default shield, which
# cuts gen_concurrency (the knob shield).
# name|description|flexwatt eval arguments (seeds 1..5 unless stated)
runs=(
  "7b-knobs|7B GRPO, knob-only controllers, each against the joint fixed setting of its own knobs|scenarios/grpo-7b-a100.yaml --seeds 5 --reference auto --controllers uncontrolled,static:knob=gen_concurrency+group_size,threshold,pid,ppo:$K7,lookahead:knob=gen_concurrency+group_size"
  "7b-cap|7B GRPO, controllers with the cap, each against the joint fixed setting of its actuators|scenarios/grpo-7b-a100.yaml --seeds 5 --reference auto --controllers uncontrolled,static,$CAPPIN,threshold:knob=caps,pid:knob=caps,ppo:$P7,lookahead"
  "7b-cap-minus10|as 7b-cap at a 10 % lower budget (policy unchanged; static recalibrated)|scenarios/grpo-7b-a100.yaml --set budget.watts=283.14 --seeds 5 --reference auto --controllers uncontrolled,static,$CAPPIN,threshold:knob=caps,pid:knob=caps,ppo:$P7"
  "7b-cap-plus10|as 7b-cap at a 10 % higher budget|scenarios/grpo-7b-a100.yaml --set budget.watts=346.06 --seeds 5 --reference auto --controllers uncontrolled,static,$CAPPIN,threshold:knob=caps,pid:knob=caps,ppo:$P7"
  "7b-grid-event|7B GRPO under a scheduled 15 % budget drop (the base scenario plus the event), each row against the joint fixed setting safe under the whole schedule|scenarios/grpo-7b-a100-grid-event.yaml --seeds 5 --reference auto --controllers uncontrolled,static,$CAPPIN,static:schedule=levels,threshold:knob=caps,pid:knob=caps,ppo:$P7"
  "7b-grid-event-scheduled|the same, against the same-information baseline: a joint fixed setting per budget level (each calibrated on its level), switched at the announced times|scenarios/grpo-7b-a100-grid-event.yaml --seeds 5 --reference static:schedule=levels --controllers static:schedule=levels,threshold:knob=caps,pid:knob=caps,ppo:$P7"
  "7b-grid-event-unannounced|the same drop unannounced to the fixed setting: the nominal calibration held, with the budget shield acting on the caps (every row shielded)|scenarios/grpo-7b-a100-grid-event.yaml --seeds 5 --shield-on-caps --reference static:schedule=nominal --controllers static:schedule=nominal,threshold:knob=caps,pid:knob=caps,ppo:$P7"
  "7b-grid-event-unannounced-knob-shield|the same with the default shield, which cuts gen_concurrency (labelled: the knob shield)|scenarios/grpo-7b-a100-grid-event.yaml --seeds 5 --shield --reference static:schedule=nominal --controllers static:schedule=nominal,threshold:knob=caps,pid:knob=caps,ppo:$P7"
  "72b-long|72B GRPO rollout on 4 A100s, 4 h (about 25 completed steps for the fixed settings; the 1800 s run below completes about 3, too lumpy to compare on)|scenarios/grpo-72b-a100x4-rollout.yaml --seeds 5 --duration-s 14400 --reference auto --controllers uncontrolled,static,static:knob=caps,gen_concurrency=16,group_size=16,threshold:knob=gen_concurrency,ppo:$P72"
  "72b|72B GRPO rollout on 4 A100s (occupancy policy), 1800 s as the policy was trained|scenarios/grpo-72b-a100x4-rollout.yaml --seeds 5 --reference auto --controllers uncontrolled,static,static:knob=caps,gen_concurrency=16,group_size=16,threshold:knob=gen_concurrency,ppo:$P72"
  "fleet|16-GPU fleet, 3.2 kW budget, staggered start, 1 h|scenarios/fleet-16xa100.yaml --set fleet.start=staggered --seeds 5 --duration-s 3600 --reference auto --controllers uncontrolled,static:knob=caps,static:knob=caps,gen_concurrency=16,fleet"
)
# The caps scenarios: the imbalanced ones and the adaptation scenario (block caps), the
# balanced and H100/H200 ones (caps-balanced) and the pipeline jobs (caps-pipeline, docs/caps.md
# "Pipeline jobs in flexwatt caps": 3600 s runs, about 8 min on the shared 2-core machine).
CAPS_IMBALANCED="caps-pipeline-imbalance-a100x8 caps-moe-imbalance-a100x8 caps-pipeline-imbalance-a100x64 caps-adapt-pipeline-a100x8"
CAPS_BALANCED="caps-pretrain-a100x1 caps-pretrain-a100x8 caps-pretrain-a100x64 caps-pretrain-h100x8 caps-pretrain-h200x8"
CAPS_PIPELINE="caps-pp4-a100pcie-x8 caps-pp4-a100pcie-x8-straggler caps-pp8-a40-x16 caps-pp8-a40-x16-straggler caps-pp4-a100x8 caps-pp4-a100x8-straggler caps-pp8-a100x64 caps-pp8-a100x64-straggler"
PERSEUS_DATA=${PERSEUS_DATA:-../shared/data/perseus}
# The measured series of the field demonstration (the dr blocks).
DR_DATA=${DR_DATA:-data/emerald-phoenix}  # the field files shipped with their source and licence
# The nodes and length of the coordinator runs (DR_FLEET_NODES=12 DR_FLEET_DURATION=120 for a
# short check of the blocks; the docs' table is the default).
DR_FLEET_NODES=${DR_FLEET_NODES:-64}
DR_FLEET_DURATION=${DR_FLEET_DURATION:-480}
# The seeds runs (a block per mix, its three seeds at once: 21 minutes of wall-clock time at the
# default): a hold of 0.5 D, at least 10 minutes. Each mix with its event file's depth: mix|depth.
DR_FLEET_HOLD_DURATION=${DR_FLEET_HOLD_DURATION:-1260}
DR_FLEET_MIXES=("aps|0.25" "training-heavy|0.25" "inference-heavy|0.15")
# The arms of the coordinator table (a block each: 8 minutes of wall-clock time at the default).
# id|label|scripts/fleet_sim.sh arguments
DR_FLEET_ARMS=(
  "open|open loop (split = target)|"
  "integral|site loop, integral only|--site-loop --no-draw-curves"
  "curves|site loop, curves as feed-forward|--site-loop"
  "mix|APS job mix, curves allocator, site loop|--mix aps --allocator curves --site-loop"
  "reclaim|APS job mix, as above + idle reclaim|--mix aps --allocator curves --site-loop --site-loop-reclaim"
)
# The drift blocks (results-all only): docs/results.md's non-stationary families, each row against
# the operator's baselines: the joint fixed setting calibrated once on the start (the
# reference, tok/ref), recalibrated every N s (the 7B family also cap only, knobs held) with
# the recalibrations' lost work counted (net tokens = tokens x D / (D + cost)), and the
# hindsight per-segment fixed setting (an upper reference no one can deploy); against
# uncontrolled, pid, the shipped PPO policy, the mpc planner on its online twin (and on 7B the
# threshold rule and the look-ahead reference). Families: 7B completion-length drift (growing,
# U-shaped, declining: docs/simulator.md "Completion-length drift"), 72B drift (the same three
# shapes over 33 h), the 7B unannounced budget steps, the 16-GPU fleet with job churn; then the
# stationary grpo-7b-a100 with mpc against the joint-grid fixed setting. Every row's decision
# cost (wall us per update() call, one thread per scenario; eval's `decision_us` lines) is
# measured in the same run. Evaluation seeds 1-2.
DRIFT_SEEDS=${DRIFT_SEEDS:-2}
# The policy distilled from mpc (imitation, docs/rl.md "Imitation of a planner"; chosen on
# validation seeds by policies/README.md's rule): its row beside mpc's on the three drift files
# and the budget steps.
PIM7=policies/grpo-7b-a100-imit-mpc.json
DRIFT_CTL="uncontrolled,static:calib_s=600,static:calib_s=600,recal_s=1800,recal=inner,static:calib_s=600,recal_s=1800,static:recal_s=1800,threshold:knob=caps,pid:knob=caps,ppo:$P7,mpc,ppo:$PIM7,lookahead"
DRIFT_STAT_CTL="static,static:calib_s=600,mpc"
# 72B: steps of 900-1900 s, so the calibration spans an hour, recalibration every 20000 s,
# hindsight per 40000 s segment; mpc replans hourly on 5400 s twin episodes (options compared
# with the defaults on validation seed 500001 only: docs/control.md "mpc").
MPC72="mpc:replan_s=3600,horizon_s=5400,fit_window_s=7200"
DRIFT72_CTL="uncontrolled,static:calib_s=3600,static:calib_s=3600,recal_s=20000,static:recal_s=40000,pid:knob=caps,ppo:$P72,$MPC72"
# Budget steps at 3000 s and 6000 s: the operator recalibrates every 1800 s (at 1800, 3600, ...:
# it learns of a step at its next recalibration); the hindsight segments are the budget levels
# (recal_s=3000); plain `static` calibrates on whole episodes against the whole schedule
# (foresight, labelled so).
STEPS_CTL="uncontrolled,static,static:calib_s=600,static:calib_s=600,recal_s=1800,static:recal_s=3000,threshold:knob=caps,pid:knob=caps,ppo:$P7,mpc,ppo:$PIM7"
CHURN_CTL="uncontrolled,static:calib_s=1800,static:calib_s=1800,recal_s=1800,static:recal_s=1800,fleet,mpc"
# Phase-mix shifts (7B: data-loader stalls, none, checkpoints) with the 7B family's rows but the
# look-ahead (CPU); stragglers on the fleet with the churn rows. The churn and straggler
# fleets also run with the SafetyLimiter's budget shield on every row, acting on the caps
# (--shield-on-caps): the same-information baseline for an unannounced change is the nominal
# calibration plus the shield (the grid-event block's rule).
PHASE_CTL="uncontrolled,static:calib_s=600,static:calib_s=600,recal_s=1800,static:recal_s=1800,threshold:knob=caps,pid:knob=caps,ppo:$P7,mpc"
# Shielded runs add the once-calibrated setting deciding every 0.5 s tick (period_s=0.5): the
# limiter's shield acts at every tick whatever the controller's period (docs/control.md), so
# the two rows should match (a check that the period no longer matters).
PHASE_SH_CTL="$PHASE_CTL,static:calib_s=600,period_s=0.5"
CHURN_SH_CTL="uncontrolled,static:calib_s=1800,static:calib_s=1800,period_s=0.5,static:recal_s=1800,fleet,mpc"
config_vars=$(compgen -v | LC_ALL=C sort | LC_ALL=C comm -13 <(echo "$config_before") - | grep -vx config_before || true)
# The settings a caller may set in the environment (absent from the difference above when set).
config_vars=" $(tr '\n' ' ' <<<"$config_vars DRIFT_SEEDS DR_DATA DR_FLEET_NODES DR_FLEET_DURATION PERSEUS_DATA") "

# ---- helpers of the block functions ----
# A block function runs with the repository as its working directory, $tmp its work directory
# (every file in it is kept in the block's cache entry; the outputs of the blocks it reads are
# copied in first) and $out its part of docs/results.md (appended to). It writes other docs only
# through splice, and stops the run by failing (exit or return non-zero).

# splice DOC NAME FILE: FILE goes between <!-- results:NAME:begin --> and
# <!-- results:NAME:end --> of DOC (NAME empty: README.md's <!-- results:begin -->/end) once the
# block has finished; fails when the block does not declare DOC:NAME or DOC has no such markers.
splice() {
  local n
  block_writes "$cur_block" "$1" "$2" ||
    { echo "results: block $cur_block splices $1:${2:-(unnamed)}, which its block line does not declare" >&2; exit 1; }
  doc_has_markers "$1" "$2" || { echo "results: $1 has no marker ${2:-(unnamed)}" >&2; exit 1; }
  n=$(wc -l <"$cur_stage/splices.tsv")
  cp "$3" "$cur_stage/splice/$n.md"
  printf '%s|%s|splice/%s.md\n' "$1" "$2" "$n" >>"$cur_stage/splices.tsv"
}

# row_of ARRAY ID: the row of ARRAY (rows "id|...") whose first field is ID.
row_of() {
  local -n rows_=$1
  local r
  for r in "${rows_[@]}"; do [ "${r%%|*}" = "$2" ] && { printf '%s\n' "$r"; return 0; }; done
  echo "results: $1 has no row $2" >&2
  return 1
}

# capnet_policies: every shipped capnet policy, comma-separated.
capnet_policies() { printf '%s\n' policies/capnet-*.json | paste -sd, -; }

# ---- controllers: the eval runs behind the README's table (docs/results.md) ----
# controllers_runs NAME...: the runs of `runs` named, each writing its table (--wide: every
# column, as docs/results.md keeps them) and its JSON; a failure (e.g. a static with no safe
# setting) is recorded as such.
controllers_runs() {
  local want r name desc args
  for want in "$@"; do
    r=$(row_of runs "$want")
    IFS='|' read -r name desc args <<<"$r"
    echo "results: $name" >&2
    # shellcheck disable=SC2086
    if ! "$bin" eval $args --wide --json-out "$tmp/$name.json" >"$tmp/$name.txt" 2>"$tmp/$name.err"; then
      echo "FAILED: $(tail -1 "$tmp/$name.err")" >"$tmp/$name.txt"
      echo '{"controllers": []}' >"$tmp/$name.json"
    fi
    {
      echo "## $name: $desc"
      echo
      echo '```'
      echo "flexwatt eval $args"
      echo '```'
      echo
      echo '```'
      grep -v "^(wall " "$tmp/$name.txt"  # wall time varies run to run
      echo '```'
      echo
    } >>"$out"
  done
}

# The README's table: the learned controllers (and the look-ahead) against each run's reference.
row() {  # RUN LABEL-SUBSTRING TEXT
  # "wins": this row when it makes at least its reference's step tokens at no more
  # offset-averaged violations (0.05 points of slack); the fixed reference when it makes more
  # tokens at no more violations; "neither" when each is better on one of the two.
  jq -r --arg l "$2" --arg t "$3" '
    def pct(x): if x == null then "-" else ((x - 1) * 1000 | round / 10 | tostring) + " %" end;
    .controllers as $all |
    ([$all[] | select(.name == "static")][0].progress.completed_step_tokens.mean) as $st |
    .controllers[] | select(.name | contains($l)) | .reference as $ref |
    (if $st == null then "-" elif $ref == "static" or .name == "static" then "as vs reference"
     else pct(.progress.completed_step_tokens.mean / $st) end) as $every |
    ([$all[] | select(.name == $ref)][0].violation_rate_offsets.rate.mean) as $rv |
    (if .name == $ref then "(the reference)"
     elif .vs_reference.completed_step_tokens >= 1 and .violation_rate_offsets.rate.mean <= $rv + 0.0005 then "this row"
     elif .vs_reference.completed_step_tokens >= 1 then "the fixed reference (this row breaks the budget more)"
     elif $rv > .violation_rate_offsets.rate.mean + 0.0005 then "neither (the fixed reference makes more tokens but breaks the budget more)"
     else "the fixed reference" end) as $win |
    "| \($t) | \(.progress.completed_step_tokens.mean | round) | \(pct(.vs_reference.completed_step_tokens)) | \(pct(.vs_reference.tokens_per_mwh)) | \(.violation_rate_offsets.rate.mean * 10000 | round / 100) % | \(.violation_rate_sliding.rate.mean * 10000 | round / 100) % | \(.steps_violating.mean * 1000 | round / 10) % | \(.progress.steps_per_hour.mean * 10 | round / 10) | \($ref) | \($win) | \($every) |"' \
    "$tmp/$1.json" | head -1
}
# headline_results: the README's table (between its results markers), its result sentences
# (scripts/readme_snippets.py, between its results:readme-NAME markers) and docs/control.md's
# table of static calibration costs, from the runs of the controllers blocks.
headline_results() {
  local r name f
  local -a snippet_runs=()
  {
    echo "| | step tokens | vs reference | tokens/MWh vs reference | viol (offset mean) | sliding | steps violating | steps/h | reference | wins on step tokens | step tokens vs \`static\` (every actuator) |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    row 7b-knobs "ppo:" "7B, PPO knobs only"
    row 7b-knobs "threshold" "7B, threshold (knobs)"
    row 7b-knobs "pid" "7B, pid (knobs)"
    row 7b-knobs "uncontrolled" "7B, uncontrolled"
    row 7b-cap "ppo:" "7B, PPO knobs + cap"
    row 7b-cap "threshold" "7B, threshold (cap)"
    row 7b-cap "pid" "7B, pid (cap)"
    row 7b-cap "lookahead" "7B, look-ahead reference (knobs + cap)"
    row 7b-cap-minus10 "ppo:" "7B, PPO knobs + cap, budget −10 %"
    row 7b-cap-plus10 "ppo:" "7B, PPO knobs + cap, budget +10 %"
    row 7b-grid-event "ppo:" "7B, PPO knobs + cap, grid event, vs the setting safe all through"
    row 7b-grid-event-scheduled "ppo:" "7B, PPO knobs + cap, grid event, vs the per-level schedule"
    row 7b-grid-event "static:schedule=levels" "7B, per-level fixed schedule (fixed), grid event"
    row 7b-grid-event-unannounced "ppo:" "7B, PPO knobs + cap, unannounced drop, shield on the caps, vs nominal static + the same shield"
    row 7b-grid-event-unannounced-knob-shield "ppo:" "7B, PPO knobs + cap, unannounced drop, knob shield (cuts gen_concurrency), vs nominal static + knob shield"
    row 72b-long "ppo:" "72B, PPO occupancy, 4 h"
    row 72b-long "static:knob=caps,gen_concurrency=16,group_size=16" "72B, 7B static-cap recipe (fixed), 4 h"
    row 72b-long "uncontrolled" "72B, uncontrolled, 4 h"
    row 72b "ppo:" "72B, PPO occupancy, 1800 s (about 3 steps: lumpy)"
    row fleet "fleet" "16-GPU fleet, fleet controller"
    row fleet "static:knob=caps,gen_concurrency=16" "16-GPU fleet, caps + gen_concurrency 16 (fixed)"
  } >"$tmp/table.md"
  {
    echo "## Headline table (copied into README.md)"
    echo
    cat "$tmp/table.md"
    echo
  } >>"$out"
  splice README.md "" "$tmp/table.md"
  # The README's sentences, from the same table and the runs' eval tables.
  for r in "${runs[@]}"; do snippet_runs+=(--run "$r"); done
  mkdir -p "$tmp/readme"
  python3 scripts/readme_snippets.py --out-dir "$tmp/readme" --eval-dir "$tmp" "${snippet_runs[@]}" "$out" ||
    { echo "results: scripts/readme_snippets.py failed (README.md left as it was)" >&2; exit 1; }
  for f in "$tmp"/readme/readme-*.md; do splice README.md "$(basename "$f" .md)" "$f"; done
  # docs/control.md's table of static calibration costs, from every run's notes.
  {
    echo "| run | row | searched | points | calibration episodes | setup GPU-h |"
    echo "|---|---|---|---|---|---|"
    for r in "${runs[@]}"; do
      IFS='|' read -r name _ <<<"$r"
      jq -r --arg run "$name" '.controllers[] | select(.notes.setup_cost != null and (.name | startswith("static")))
        | "| \($run) | `\(.name)` | \(.notes.searched // (.notes.levels // [] | map(.calibration | if type == "object" then .searched else empty end) | unique | join(", "))) | \(.notes.search.points // "-") | \(.notes.setup_cost.episodes) | \(.notes.setup_cost.gpu_h | round) |"' \
        "$tmp/$name.json"
    done
  } >"$tmp/static-costs.md"
  splice docs/control.md static-costs "$tmp/static-costs.md"
  {
    echo "## Static calibration costs (copied into docs/control.md)"
    echo
    cat "$tmp/static-costs.md"
    echo
  } >>"$out"
}

# ---- caps: per-GPU power caps (docs/caps.md, issue 16) ----
# `flexwatt caps` on each scenario, every shipped capnet policy, seeds 1–5: its section of
# docs/results.md and its table of docs/caps.md (between its results:caps-NAME markers). The
# imbalanced 8- and 64-GPU scenarios and the adaptation scenario (stages repartitioned at
# 600 s): about 30 s on 2 cores (the 64-GPU run is most of it).

# About 30 s on 2 cores (the 64-GPU run is most of it); --all adds the balanced and H100/H200
# scenarios.


# caps_table JSON [all]: a scenario's table: the best uniform and per-GPU static point within
# 1.2 %, 5 % and 10 % throughput lost (each at most once), then Zeus (with and without its
# profiling), frontier (pipeline jobs), PID and capnet, with each arm's cost (docs/caps.md); with
# `all`, every arm.
caps_table() {
  jq -r --arg all "${2:-}" '
    def f(x): (x * 10000 | round) as $r | ($r | if . < 0 then -. else . end) as $m
      | (if $r < 0 then "-" else "" end) + (($m / 100 | floor) | tostring) + "."
        + (($m % 100) as $c | if $c < 10 then "0" + ($c | tostring) else ($c | tostring) end);
    def sg(x): (if x >= 0 then "+" else "" end) + f(x);
    def row: "| \(.name) | \(f(.energy_saved)) | \(f(.throughput_lost)) | \(f(.edp_change)) | \(f(.energy_saved_same_time)) | \(sg(.margin_vs_uniform)) | \(sg(.margin_vs_per_gpu)) | \(.cost) |";
    .arms as $a
    | ([0.012, 0.05, 0.10] | map(. as $l | ["uniform", "per-gpu"] | map(. as $fam
        | [$a[] | select(.family == $fam and .throughput_lost <= $l and .energy_saved > 0)]
        | if length == 0 then empty else max_by(.energy_saved).name end)) | flatten) as $picked
    | ($picked | reduce .[] as $n ([]; if index([$n]) then . else . + [$n] end)) as $names
    | "| arm | saved % | lost % | EDP % | same-time % | vs uniform | vs per-GPU | cost |",
      "|---|---|---|---|---|---|---|---|",
      (if $all == "all" then ($a[] | row) else
        (($names[] as $n | $a[] | select(.name == $n) | row),
         ($a[] | select(.family == "frontier" or .family == "envpipe" or .family == "zeus" or .family == "pid" or .family == "capnet") | row))
       end)' "$1"
}

# caps_intro: the head of docs/results.md's caps section.
caps_intro() {
  {
    echo "## caps: per-GPU caps (capnet) against uniform and per-GPU static caps, Zeus and PID"
    echo
    echo "Energy saved per token and throughput lost against the uncapped run of each seed;"
    echo "\`vs unif pt\` / \`vs pgpu pt\` = energy saved minus the uniform / per-GPU static frontier"
    echo "at the arm's own loss, in points (docs/caps.md)."
    echo
  } >>"$out"
}

# caps_scenarios SCENARIO...: each scenario's run ($tmp/caps-SCENARIO.json), its section of
# docs/results.md and its docs/caps.md table where that doc has its markers.
caps_scenarios() {
  local pol s args
  pol=$(capnet_policies)
  for s in "$@"; do
    echo "results: $s" >&2
    args="scenarios/$s.yaml --seeds 5 --policies $pol"
    # shellcheck disable=SC2086
    "$bin" caps $args --threads 2 --json >"$tmp/caps-$s.json" 2>"$tmp/caps-$s.err" || echo '{"arms": []}' >"$tmp/caps-$s.json"
    caps_table "$tmp/caps-$s.json" >"$tmp/caps-$s.md"
    {
      echo "### $s"
      echo
      echo '```'
      echo "flexwatt caps $args --json"
      echo '```'
      echo
      caps_table "$tmp/caps-$s.json" all
      echo
      jq -r '.best_at_low_loss | "best at <= \(.max_throughput_lost * 100) % lost: \(.arm), \(.energy_saved * 10000 | round / 100) % saved at \(.throughput_lost * 10000 | round / 100) % lost; frontiers there: uniform \(.uniform_frontier * 10000 | round / 100) %, per-GPU \(.per_gpu_frontier * 10000 | round / 100) %"' "$tmp/caps-$s.json"
      echo
    } >>"$out"
    if grep -qxF "<!-- results:caps-$s:begin -->" docs/caps.md; then
      splice docs/caps.md "caps-$s" "$tmp/caps-$s.md"
    fi
  done
}
# shellcheck disable=SC2086  # the lists are words
caps_block() { caps_intro; caps_scenarios $CAPS_IMBALANCED; }
# The balanced and H100/H200 scenarios (results-all: several minutes, the 64-GPU one most of
# it), then docs/caps.md's re-check of the <= 1.2 % targets from them.
# shellcheck disable=SC2086
caps_balanced_block() { caps_scenarios $CAPS_BALANCED; caps_recheck; }
# The pipeline jobs (results-all: 3600 s runs, about 8 min on 2 cores), then their summary table.
# shellcheck disable=SC2086
caps_pipeline_block() { caps_scenarios $CAPS_PIPELINE; caps_pipeline; }

# caps_pipeline: docs/caps.md's pipeline table (results:caps-pipeline), one row per CAPS_PIPELINE
# run: the uniform and per-GPU static frontiers at 1.2 % lost, the offline `frontier` (constant
# caps per stage, and `frontier:schedule`: a cap per stage per 1F1B phase; `frontier:loss-rule`:
# the constant plan at capnet online's loss rule, the equal-guarantee reference), capnet
# online (its share of the frontier's saving; its margin over the per-GPU static frontier at its
# own loss), the EnvPipe-like arm, Zeus with and without its profiling, the best shipped capnet
# policy at <= 1.2 % lost, and the targets (issue 27; the seed's -20.1 % / -17.8 % are constants:
# docs/sources.md). results-all only (those runs are).
caps_pipeline() {
  local s
  {
    echo "| scenario | uniform / per-GPU static frontier at 1.2 % | frontier (offline profile) | frontier:schedule | frontier, loss rule | capnet online | online / frontier | online / frontier, loss rule | online vs per-GPU static, pt | EnvPipe-like | Zeus (profiling in run); held | shipped capnet ≤ 1.2 % | targets (online) | seed (online) |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for s in $CAPS_PIPELINE; do
      jq -r --arg s "$s" '
        def p(x): (x * 10000 | round) as $r | ($r | if . < 0 then -. else . end) as $m
          | (if $r < 0 then "-" else "" end) + (($m / 100 | floor) | tostring) + "."
            + (($m % 100) as $c | if $c < 10 then "0" + ($c | tostring) else ($c | tostring) end);
        def pt(a): if a == null then "-" else "\(p(a.energy_saved)) / \(p(a.throughput_lost))" end;
        def arm(n): ([.arms[] | select(.name == n)] | .[0]);
        def mm(c): if c then "met" else "**missed**" end;
        (arm("frontier")) as $f | (arm("frontier:schedule")) as $fs | (arm("frontier:loss-rule")) as $fr | (arm("capnet:online")) as $o | (arm("envpipe-like")) as $e
        | (arm("zeus:eta=0.5")) as $z | (arm("zeus:held")) as $zh
        | ([.arms[] | select(.family == "capnet" and .name != "capnet:online" and .throughput_lost <= 0.012 and .energy_saved > 0)]
           | if length == 0 then "none saves" else (max_by(.energy_saved) | "\(.name | sub("capnet:"; "")) \(pt(.))") end) as $cn
        | ($o != null and $o.throughput_lost <= 0.012) as $inloss
        | (if $f == null or $o == null then "-" else (1000 * $o.energy_saved / $f.energy_saved | round / 10 | tostring) + " %" end) as $share
        | (if $fr == null or $o == null then "-" else (1000 * $o.energy_saved / $fr.energy_saved | round / 10 | tostring) + " %" end) as $share_r
        | (if $o == null or $f == null then "-" else
             "≥ 90 %: " + mm($inloss and $o.energy_saved >= 0.9 * $f.energy_saved)
             + (if ($s | test("straggler")) then "; ≥ 5 pt: " + mm($inloss and $o.margin_vs_per_gpu >= 0.05) else "" end)
           end) as $t
        | (if ($s | test("a100x8")) then {pub: 0.201, txt: "−20.1 % at 1.1 %"}
           elif ($s | test("a100x64")) then {pub: 0.178, txt: "−17.8 % at 1.2 %"} else null end) as $pub
        | (if $pub == null or $o == null then "-" else $pub.txt + ": " + mm($inloss and $o.energy_saved >= $pub.pub) end) as $seed
        | "| \($s) | \(p(.best_at_low_loss.uniform_frontier)) / \(p(.best_at_low_loss.per_gpu_frontier)) | \(pt($f)) | \(pt($fs)) | \(pt($fr)) | \(pt($o)) | \($share) | \($share_r) | \(if $o == null then "-" else (if $o.margin_vs_per_gpu >= 0 then "+" else "" end) + p($o.margin_vs_per_gpu) end) | \(pt($e)) | \(pt($z)); held \(pt($zh)) | \($cn) | \($t) | \($seed) |"' \
        "$tmp/caps-$s.json"
    done
  } >"$tmp/caps-pipeline.md"
  splice docs/caps.md caps-pipeline "$tmp/caps-pipeline.md"
}

# caps_recheck: docs/caps.md's re-check of the <= 1.2 % targets on the balanced A100 scenarios
# (each run's "best at <= 1.2 % lost" line; the published figures beside them are constants:
# docs/sources.md). results-all only (those runs are).
caps_recheck() {
  local n pub
  {
    echo "| scale | best arm at ≤ 1.2 % lost | uniform / per-GPU frontier at 1.2 % | published |"
    echo "|---|---|---|---|"
    for n in "1|26.4 % at 0.9 %" "8|20.1 % at 1.1 %" "64|17.8 % at 1.2 %"; do
      IFS='|' read -r n pub <<<"$n"
      jq -r --arg n "$n" --arg pub "$pub" '
        def p(x): "\(x * 10000 | round / 100) %";
        .best_at_low_loss | "| \($n) × A100 | \(.arm // "none"): \(p(.energy_saved // 0)) saved at \(p(.throughput_lost // 0)) lost | \(p(.uniform_frontier)) / \(p(.per_gpu_frontier)) | \($pub) |"' \
        "$tmp/caps-caps-pretrain-a100x$n.json"
    done
  } >"$tmp/caps-recheck.md"
  splice docs/caps.md caps-recheck "$tmp/caps-recheck.md"
}

# ---- flexibility: docs/flexibility.md's tables (PFI presets, population study, DR) ----
flex_results() {
  local f
  echo "results: flexibility" >&2
  {
    echo "| job (command: \`flexwatt sweep --scenario S --steady --measure-s 300\`) | simulated | published | |"
    echo "|---|---|---|---|"
    # The published H200 per-class medians (the paper's, docs/sources.md) are constants here.
    for f in "dense PT|scenarios/flex/dense-pt-h200x8.yaml|1.27" "MoE PT|scenarios/pretrain-moe-h200x8.yaml|1.43" \
             "MoE FT|scenarios/finetune-moe-h200x8.yaml|2.10"; do
      IFS='|' read -r label sc pub <<<"$f"
      "$bin" sweep --scenario "$sc" --steady --measure-s 300 --json |
        jq -r --arg l "$label" --arg s "$sc" --arg pubs "$pub" --argjson pub "$pub" '
          .jobs[0].pfi as $p | (($p / $pub - 1) * 100 | round) as $d
          | "| \($l), S = \($s) | \($p * 100 | round / 100) | \($pubs) | \(if $d > 0 then "+" elif $d < 0 then "−" else "" end)\($d | if . < 0 then -. else . end) % |"'
    done
  } >"$tmp/flex-pfi.md"
  # study_table JSON: the gap closed per method at 10-40 % cuts (the 30 % row bold)
  study_table() {
    jq -r '
      def g(m): if (m.gap_closed * 1000 | round) == 1000 then "100 %"
        else "\(m.gap_closed * 1000 | round / 10) % ±\(m.gap_closed_ci95 * 1000 | round / 10)" end
        + " [\(m.gain_over_equal_per_job | round)]";
      "| cut | pfi | pfi_scaled | greedy |", "|---|---|---|---|",
      (.cuts[] | (.cut * 100 | round) as $c | select([10, 20, 30, 40] | index([$c]))
       | .methods as $m | [("\($c) %"), g($m.pfi), g($m.pfi_scaled), g($m.greedy)]
       | if $c == 30 then map("**" + . + "**") else . end | "| " + join(" | ") + " |")' \
      "$1"
  }
  "$bin" allocate --study --json >"$tmp/study.json"
  study_table "$tmp/study.json" >"$tmp/flex-study.md"
  "$bin" allocate --study --fixed-gpus 8 --json >"$tmp/study-8.json"
  study_table "$tmp/study-8.json" >"$tmp/flex-study-8.md"
  "$bin" allocate --study --sla-tiers --json >"$tmp/study-sla.json"
  study_table "$tmp/study-sla.json" >"$tmp/flex-study-sla.md"
  "$bin" allocate --dr scenarios/flex/dr-fleet-h200.yaml --json >"$tmp/dr.json"
  jq -r '
    def p(x): (x * 1000 | round) as $r
      | if $r == 0 or $r == 1000 then "\($r / 10) %" else "\($r / 10 | floor).\($r % 10) %" end;
    "| method | adherence (30 s) | worst 30 s excess | power / target | throughput retained |",
    "|---|---|---|---|---|",
    (.methods[] | "| \(.method) | \(p(.adherence_30s)) | \(p(.worst_excess_30s)) | \(p(.power_used)) | \(p(.throughput_retained)) |")' \
    "$tmp/dr.json" >"$tmp/flex-dr.md"
  {
    echo "## flexibility: docs/flexibility.md's tables"
    echo
    echo '```'
    echo "flexwatt sweep --scenario S --steady --measure-s 300 --json   # S: each row's scenario"
    echo "flexwatt allocate --study --json"
    echo "flexwatt allocate --study --fixed-gpus 8 --json"
    echo "flexwatt allocate --study --sla-tiers --json"
    echo "flexwatt allocate --dr scenarios/flex/dr-fleet-h200.yaml --json"
    echo '```'
    echo
    cat "$tmp/flex-pfi.md"; echo; cat "$tmp/flex-study.md"; echo
    cat "$tmp/flex-study-8.md"; echo; cat "$tmp/flex-study-sla.md"; echo; cat "$tmp/flex-dr.md"; echo
  } >>"$out"
  splice docs/flexibility.md flex-pfi "$tmp/flex-pfi.md"
  splice docs/flexibility.md flex-study "$tmp/flex-study.md"
  splice docs/flexibility.md flex-study-8 "$tmp/flex-study-8.md"
  splice docs/flexibility.md flex-study-sla "$tmp/flex-study-sla.md"
  splice docs/flexibility.md flex-dr "$tmp/flex-dr.md"
}

# ---- refinement: the joint search against the exhaustive grid (docs/control.md) ----
# results-all only (three exhaustive grids, about 40 s of calibration each on 2 cores): the
# default joint search's calibration tokens against every rung of the knobs with the cap
# calibrated at each (static:grid=1000,refine=off). The calibration does not depend on the
# evaluation seeds, so one evaluation seed is run.
refine_results() {
  local r label args d ctl
  echo "results: refinement" >&2
  {
    echo "| scenario | search | points | calibration episodes | calibration tokens | vs exhaustive |"
    echo "|---|---|---|---|---|---|"
  } >"$tmp/refine.md"
  for r in "7B GRPO, 1800 s|scenarios/grpo-7b-a100.yaml|static|static:grid=1000,refine=off" \
           "72B GRPO rollout, 1800 s|scenarios/grpo-72b-a100x4-rollout.yaml|static|static:grid=1000,refine=off" \
           "16-GPU fleet, 3600 s|scenarios/fleet-16xa100.yaml --set fleet.start=staggered --duration-s 3600|static:knob=caps+gen_concurrency|static:knob=caps+gen_concurrency,grid=1000,refine=off"; do
    IFS='|' read -r label args d ctl <<<"$r"
    # shellcheck disable=SC2086
    "$bin" eval $args --seeds 1 --controllers "$d,$ctl" --json-out "$tmp/refine.json" >/dev/null 2>"$tmp/refine.err" ||
      { echo "| $label | FAILED: $(tail -1 "$tmp/refine.err") | | | | |" >>"$tmp/refine.md"; continue; }
    jq -r --arg l "$label" '
      (.controllers | map(.notes.search.best_completed_tokens) | last) as $ex
      | .controllers[] | .notes.search as $s
      | "| \($l) | `\(.name)` | \($s.points) | \($s.episodes) | \($s.best_completed_tokens | round) | \((($s.best_completed_tokens / $ex - 1) * 1000 | round / 10)) % |"' \
      "$tmp/refine.json" >>"$tmp/refine.md"
  done
  {
    echo "## Refinement: the joint search against the exhaustive grid (copied into docs/control.md)"
    echo
    echo '```'
    echo "flexwatt eval SCENARIO --seeds 1 --controllers DEFAULT,EXHAUSTIVE   # each row's pair"
    echo '```'
    echo
    cat "$tmp/refine.md"
    echo
  } >>"$out"
  splice docs/control.md static-refine "$tmp/refine.md"
}

# calibration_results: docs/simulator.md's "Calibration" table from one run of test_sim's
# [calib] lines and `flexwatt fit` on the public A100 sweep (scripts/calib_table.py; ~30 s).
calibration_results() {
  echo "results: calibration (test_sim [calib] lines)" >&2
  python3 scripts/calib_table.py "$bin" "$bindir/tests/test_sim" . >"$tmp/calib.md" ||
    { echo "results: calibration failed (docs/simulator.md left as it was)" >&2; exit 1; }
  splice docs/simulator.md calibration "$tmp/calib.md"
}

# pipeline_plan_results: docs/caps.md's `flexwatt pipeline plan` tables against Perseus
# (scripts/pipeline_table.sh: the like-for-like comparison, --perseus; the tables at
# --slowdown-max 0.012 and at 0; ~10 s each). The planning CPU column moves with the machine.
pipeline_plan_results() {
  echo "results: pipeline plan (GPT-3 175B, held-out Bloom)" >&2
  if ! { bash scripts/pipeline_table.sh --perseus "$bin" >"$tmp/pperseus.md" &&
         bash scripts/pipeline_table.sh "$bin" >"$tmp/pplan.md" &&
         bash scripts/pipeline_table.sh "$bin" 0 >"$tmp/pplan0.md"; }; then
    echo "results: pipeline plan failed (docs/caps.md left as it was)" >&2; exit 1
  fi
  splice docs/caps.md pipeline-perseus "$tmp/pperseus.md"
  splice docs/caps.md pipeline-plan "$tmp/pplan.md"
  splice docs/caps.md pipeline-plan-equal-time "$tmp/pplan0.md"
}

# caps_adapt_results: docs/caps.md's "Adaptation" table (scripts/caps_adapt_table.sh) from the
# caps block's runs (the two imbalanced scenarios and caps-adapt-pipeline-a100x8) and two more of
# the adaptation scenario: balanced -> 0.4 at 600 s, and 64 GPUs (about 40 s on 2 cores).
caps_adapt_results() {
  local pol name set r
  pol=$(capnet_policies)
  for r in "caps-adapt-balanced-to-0.4-a100x8|--set jobs.0.hetero={imbalance: 0, change_at_s: 600, imbalance_after: 0.4}" \
           "caps-adapt-pipeline-a100x64|--set gpus.0.count=64 --set jobs.0.gpus=64 --set budget.watts=25600"; do
    IFS='|' read -r name set <<<"$r"
    echo "results: $name" >&2
    if [ "$name" = caps-adapt-balanced-to-0.4-a100x8 ]; then
      "$bin" caps scenarios/caps-adapt-pipeline-a100x8.yaml --seeds 5 --policies "$pol" --threads 2 --json \
        --set 'jobs.0.hetero={imbalance: 0, change_at_s: 600, imbalance_after: 0.4}' >"$tmp/caps-$name.json"
    else
      # shellcheck disable=SC2086
      "$bin" caps scenarios/caps-adapt-pipeline-a100x8.yaml --seeds 5 --policies "$pol" --threads 2 --json \
        $set >"$tmp/caps-$name.json"
    fi || { echo "results: $name failed (docs/caps.md left as it was)" >&2; exit 1; }
  done
  bash scripts/caps_adapt_table.sh "$tmp" >"$tmp/caps-adapt.md" ||
    { echo "results: caps adaptation table failed (docs/caps.md left as it was)" >&2; exit 1; }
  splice docs/caps.md caps-adapt "$tmp/caps-adapt.md"
}

# caps_training_results: docs/caps.md's training table from the shipped capnet policies' logs
# (instant).
caps_training_results() {
  python3 scripts/capnet_training_table.py policies >"$tmp/caps-training.md" ||
    { echo "results: capnet training table failed (docs/caps.md left as it was)" >&2; exit 1; }
  splice docs/caps.md caps-training "$tmp/caps-training.md"
}

# authority_results: docs/operators.md's knob-authority tables (flexwatt authority, under a
# second each).
authority_results() {
  local r name sc band
  for r in "72b|grpo-72b-a100x4|" "72b-rollout|grpo-72b-a100x4-rollout|0.15-0.25" "7b|grpo-7b-a100|"; do
    IFS='|' read -r name sc band <<<"$r"
    # shellcheck disable=SC2086
    if ! { "$bin" authority "scenarios/$sc.yaml" --json >"$tmp/authority-$name.json" &&
           bash scripts/authority_table.sh "$tmp/authority-$name.json" $band >"$tmp/authority-$name.md"; }; then
      echo "results: authority $sc failed (docs/operators.md left as it was)" >&2; exit 1
    fi
    splice docs/operators.md "authority-$name" "$tmp/authority-$name.md"
  done
}

# stability_results: docs/stabilization.md's study tables (`flexwatt stabilize` on both shipped
# sites, 3 evaluation and 2 calibration seeds: about 2 minutes on 2 cores) and its aggregation
# check (test_sim's [aggregation] lines, under a second).
# shellcheck disable=SC2016  # jq programs in single quotes
stability_results() {
  local site
  local jq_table='def f1: if . == null then "-" else ((. * 10 | round) / 10 | tostring | if test("\\.") then . else . + ".0" end) end;
def ramp(w): [.ramps[] | select(.window_s == w) | .pct_of_peak_per_s][0] | f1;
"| arm | setting (chosen on calibration seeds) | ramp 1 s %pk/s | ramp 0.1 s | ramp 10 s | band % | osc %pk | E % | thr % | E st % | thr st % | cost % | meets | calib |",
"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
(.arms[] | "| \(.name) | \(.setting)\(if .candidates > 0 and (.calibration_met | not) then " (none met the limits: the closest)" else "" end) | \(ramp(1)) | \(ramp(0.1)) | \(ramp(10)) | \(.band_frac * 100 | f1) | \(.osc_steady_pct | f1) | \(.energy_overhead_pct | f1) | \(.throughput_loss_pct | f1) | \(.steady_energy_pct | f1) | \(.steady_throughput_loss_pct | f1) | \(.cost_pct | f1) | \(if .meets then "yes" else "no" end) | \(if .candidates > 0 then "\(.candidates_meeting)/\(.candidates)" else "-" end) |"),
"",
"Simulation speed of this run: \(.speed.runs) runs of \(.site.duration_s) simulated s in \(.speed.sim_wall_s * 10 | round / 10) s (\(.speed.sim_wall_s / .speed.runs * 1000 | round) ms per run, \(.site.representatives) of \(.site.ranks) ranks simulated), \(.speed.threads) threads.",
(.site.representatives as $rows
 | ([.arms[] | select(.kind == "fixed" and .name != "combined" and .meets)] | min_by(.cost_pct)) as $single
 | ([.arms[] | select(.name == "combined")][0]) as $comb
 | .arms[] | select(.kind == "controller") |
 "",
 "Controller \(.name): projected cost \(.cost_pct * 1000 | round / 1000) % (\(if .meets then "meets" else "does not meet" end) the limits) against \(if $single == null then "no single mitigation meeting them" else "\($single.cost_pct * 1000 | round / 1000) % for the best single mitigation meeting them (\($single.name)): \(.cost_pct / $single.cost_pct * 100 | round) % of it" end)\(if $comb == null then "" else ", and \($comb.cost_pct * 1000 | round / 1000) % for the best fixed combination" end). Its \(.decisions) decisions on the \($rows) rows of the site plant: \(.decision_mean_us * 1000 | round) ns mean, \(.decision_max_us * 10 | round / 10) µs at most, against a loop period of \(.loop_period_s * 1000) ms.")'
  for site in 1024 16384; do
    echo "results: stabilize site-$site-h100" >&2
    if ! { "$bin" stabilize "scenarios/stability/site-$site-h100.yaml" --quiet --json >"$tmp/stability-$site.json" &&
           jq -r "$jq_table" "$tmp/stability-$site.json" >"$tmp/stability-$site.md"; }; then
      echo "results: stabilize site-$site-h100 failed (docs/stabilization.md left as it was)" >&2; exit 1
    fi
    splice docs/stabilization.md "stability-$site" "$tmp/stability-$site.md"
  done
  "$bindir/tests/test_sim" --gtest_filter='SitePower.AggregationAgreesWithTheSiteRankByRank' \
    >"$tmp/aggregation.txt" || { echo "results: aggregation check failed" >&2; exit 1; }
  { echo "| simulated | iteration s | mean kW | mean abs 1 s ramp kW/s | band fraction |"
    echo "|---|---|---|---|---|"
    sed -nE 's/^\[aggregation\] (.*[a-z]) +iteration ([0-9.]+) s, mean ([0-9.]+) kW, mean \|1 s ramp\| ([0-9.]+) kW\/s, band ([0-9.]+)$/| \1 | \2 | \3 | \4 | \5 |/p' \
      "$tmp/aggregation.txt"; } >"$tmp/aggregation.md"
  [ "$(wc -l <"$tmp/aggregation.md")" -eq 6 ] || { echo "results: aggregation lines not found" >&2; exit 1; }
  splice docs/stabilization.md stability-aggregation "$tmp/aggregation.md"
}

# fit_cases_results: docs/simulator.md's fit-cases table from test_sim's FitCases [fit-case]
# lines (under a second).
fit_cases_results() {
  python3 scripts/fit_cases_table.py "$bindir/tests/test_sim" >"$tmp/fit-cases.md" ||
    { echo "results: fit cases failed (docs/simulator.md left as it was)" >&2; exit 1; }
  splice docs/simulator.md fit-cases "$tmp/fit-cases.md"
}

# bench_timings KIND|BENCH|DOC...: the benchmark timings (scripts/bench_timings.py) of one run of
# each build/bench/BENCH, spliced at DOC's bench-KIND markers: capnet_bench (~5 s; docs/caps.md),
# with results-all also docs/control.md's mpc_bench (~70 s at load 7) and docs/flexibility.md's
# allocation_bench (~30 s).
bench_timings() {
  local b kind doc
  for b in "$@"; do
    IFS='|' read -r kind b doc <<<"$b"
    echo "results: bench $b" >&2
    if ! { "$bindir/bench/$b" --benchmark_format=json >"$tmp/bench-$kind.json" 2>"$tmp/bench-$kind.err" &&
           python3 scripts/bench_timings.py "$kind" "$tmp/bench-$kind.json" >"$tmp/bench-$kind.md"; }; then
      echo "results: bench $b failed (docs/$doc left as it was)" >&2; exit 1
    fi
    splice "docs/$doc" "bench-$kind" "$tmp/bench-$kind.md"
  done
}
# bench_agent_results: docs/agent-api.md's current agent (agent_bench: 3 endpoints x 3 s and a
# 20 s slowloris; about 30 s).
bench_agent_results() {
  local la
  echo "results: agent_bench (about 30 s)" >&2
  la=$(cut -d' ' -f1 /proc/loadavg)
  if ! { "$bindir/bench/agent_bench" --clients 8 --seconds 3 --json >"$tmp/agent-clients.json" &&
         "$bindir/bench/agent_bench" --slowloris 40 --seconds 20 --json >"$tmp/agent-slow.json" &&
         jq -n --argjson la "$la" --slurpfile c "$tmp/agent-clients.json" --slurpfile s "$tmp/agent-slow.json" \
           '{load_avg: $la, clients: $c[0], slowloris: $s[0]}' >"$tmp/bench-agent.json" &&
         python3 scripts/bench_timings.py agent "$tmp/bench-agent.json" >"$tmp/bench-agent.md"; }; then
    echo "results: agent_bench failed (docs/agent-api.md left as it was)" >&2; exit 1
  fi
  splice docs/agent-api.md bench-agent "$tmp/bench-agent.md"
}
bench_timings_all() {
  bench_timings "mpc|mpc_bench|control.md" "allocation|allocation_bench|flexibility.md"
  bench_agent_results
}
# bench_lookahead_results: docs/control.md's look-ahead cost (two evals of 5 x 1800 s on one
# thread: ~5 min at load 9).
bench_lookahead_results() {
  local la spec t0 c0 t1 c1 me=$BASHPID runs_=()
  echo "results: look-ahead cost (two evals, about 5 min)" >&2
  la=$(cut -d' ' -f1 /proc/loadavg)
  for spec in lookahead lookahead:fixed_candidates=0; do
    # wall from the clock, CPU from this (block) shell's children (user + system) before and after
    t0=$(date +%s.%N) c0=$(awk '{print $16 + $17}' /proc/$me/stat)
    "$bin" eval scenarios/grpo-7b-a100.yaml --seeds 5 --threads 1 --controllers "$spec" \
      --json-out "$tmp/la-$spec.json" >/dev/null 2>"$tmp/la.err" ||
      { echo "results: eval $spec failed (docs/control.md left as it was)" >&2; exit 1; }
    t1=$(date +%s.%N) c1=$(awk '{print $16 + $17}' /proc/$me/stat)
    runs_+=("$(jq -c --arg s "$spec" --argjson w "$(echo "$t1 - $t0" | bc)" \
      --argjson c "$(echo "($c1 - $c0) / $(getconf CLK_TCK)" | bc -l)" \
      '{spec: $s, wall_s: $w, cpu_s: $c, eval: .}' "$tmp/la-$spec.json")")
  done
  printf '%s\n' "${runs_[@]}" | jq -s --argjson la "$la" '{load_avg: $la, runs: .}' >"$tmp/bench-lookahead.json"
  python3 scripts/bench_timings.py lookahead "$tmp/bench-lookahead.json" >"$tmp/bench-lookahead.md" ||
    { echo "results: look-ahead cost table failed (docs/control.md left as it was)" >&2; exit 1; }
  splice docs/control.md bench-lookahead "$tmp/bench-lookahead.md"
}

# ---- results-all tables written by scripts of their own (docs/fleet.md, caps.md, analysis.md) ----
# fleet_sim_results: docs/fleet.md's "Measured: fleet run" block from one real-time run
# (scripts/fleet_sim_table.sh: a 3-member etcd on loopback, 64 simulated 8-GPU nodes, 300 s of
# wall-clock time; about 5 min), then its "Scale on paper" tables. Needs etcd: a failed run
# fails the block, the doc unchanged.
fleet_sim_results() {
  echo "results: fleet-sim (about 5 min of wall-clock time)" >&2
  bash scripts/fleet_sim_table.sh --keep "$tmp/fleet-sim-run" "$bin" >"$tmp/fleet-sim.md" ||
    { echo "results: fleet-sim failed (docs/fleet.md left as it was)" >&2; exit 1; }
  splice docs/fleet.md fleet-sim-site "$tmp/fleet-sim.md"
  fleet_scale_results "$tmp/fleet-sim-run/report.json"
}
# fleet_scale_results REPORT: docs/fleet.md's "Scale on paper" tables from the fleet-sim run's
# report.json (fleet_sim_results above) and one fleet_split_bench run (scripts/fleet_scale_table.py
# states the estimate's formulas; seconds).
fleet_scale_results() {
  echo "results: fleet scale (fleet_split_bench)" >&2
  if ! { "$bindir/bench/fleet_split_bench" --benchmark_format=json --benchmark_repetitions=3 \
           --benchmark_report_aggregates_only=true >"$tmp/fleet-split.json" 2>"$tmp/fleet-split.err" &&
         python3 scripts/fleet_scale_table.py "$1" "$tmp/fleet-split.json" >"$tmp/fleet-scale.md"; }; then
    echo "results: fleet scale failed (docs/fleet.md left as it was)" >&2; exit 1
  fi
  splice docs/fleet.md fleet-scale "$tmp/fleet-scale.md"
}
# fleet_faults_results: docs/fleet.md's fault-campaign summary from one campaign
# (scripts/fleet_faults_table.sh: TLS + auth etcd, 2 coordinators, 4 simulated agents; about
# 3 min). A failed campaign fails the block, the doc unchanged.
fleet_faults_results() {
  echo "results: fleet fault campaign (about 3 min of wall-clock time)" >&2
  FLEXWATT="$bin" bash scripts/fleet_faults_table.sh 4 >"$tmp/fleet-faults.md" ||
    { echo "results: fleet fault campaign failed (docs/fleet.md left as it was)" >&2; exit 1; }
  splice docs/fleet.md fleet-faults "$tmp/fleet-faults.md"
}
# caps_targets_results: docs/caps.md's "Targets" table from the caps runs (the balanced and
# imbalanced JSONs of the caps and caps-balanced blocks), bench/capnet_bench and the shipped
# policies' training logs (scripts/caps_targets.sh).
caps_targets_results() {
  echo "results: caps targets" >&2
  bash scripts/caps_targets.sh "$tmp" "$bindir/bench/capnet_bench" >"$tmp/caps-targets.md" ||
    { echo "results: caps targets failed (docs/caps.md left as it was)" >&2; exit 1; }
  splice docs/caps.md caps-targets "$tmp/caps-targets.md"
}
# bench_results: docs/analysis.md's analyze-vs-pandas/DuckDB/Polars table from one run of
# bench/analyze_vs_pandas.py (scripts/bench_table.sh; a few minutes; make bench-deps first).
bench_results() {
  echo "results: bench (analyze against pandas, DuckDB and Polars)" >&2
  bash scripts/bench_table.sh "$bin" "$bindir/bench/analyze_bench" "$tmp/bench-floor.md" >"$tmp/bench.md" ||
    { echo "results: bench failed (docs/analysis.md left as it was)" >&2; exit 1; }
  splice docs/analysis.md bench-engines "$tmp/bench.md"
  splice docs/analysis.md bench-floor "$tmp/bench-floor.md"  # evid (issue 25): the parse-floor table
}
# pipeline_validate_results: docs/simulator.md's three `flexwatt pipeline validate` tables (the
# cap response measured on the uniform runs, with the work split profiled on the jobs
# (data/perseus/stage_work.csv), and the GPU model; ~2.5 min of CPU: results-all).
pipeline_validate_results() {
  echo "results: pipeline validate (Perseus zeus_global -> zeus_local)" >&2
  if ! { "$bin" pipeline validate --data "$PERSEUS_DATA" --stage-work data/perseus/stage_work.csv \
           --json >"$tmp/pv.json" &&
         "$bin" pipeline validate --data "$PERSEUS_DATA" --gpu-model --json >"$tmp/pvg.json" &&
         python3 scripts/pipeline_validate_table.py "$tmp/pv.json" "$tmp/pvg.json" "$tmp"; }; then
    echo "results: pipeline validate failed (docs/simulator.md left as it was)" >&2; exit 1
  fi
  splice docs/simulator.md pipeline-validate-gpu-model "$tmp/pipeline-validate-gpu-model.md"
  splice docs/simulator.md pipeline-validate "$tmp/pipeline-validate.md"
  splice docs/simulator.md pipeline-validate-profiled "$tmp/pipeline-validate-profiled.md"
}

# ---- dr: demand response against the field demonstration (issue 28) ----
# The replays of docs/flexibility.md ("flexwatt dr replay", seconds; block dr, in every run);
# the 64-node event through the coordinators of docs/fleet.md ("demand response through the
# coordinator": fleet-sim runs of 8 minutes each on a real etcd, scripts/fleet_sim.sh: the single
# job open loop, integral only, curves; the APS job mix with the curves allocator, without and
# with idle reclaim; a block each, then dr-fleet writes the table; the mix arm on seeds 1-3 and a
# deep cut that needs pausing) with results-all only. The measured series are the field
# demonstration's ($DR_DATA).
dr_results() {
  local f label sc total extra
  echo "results: dr replay" >&2
  {
    echo "| replay | minutes above target | mean over-cut | ramp down | weighted performance | every job ≥ tier | projection vs measured RMSE | plant-model check: the field's per-job levels as actions, RMSE |"
    echo "|---|---|---|---|---|---|---|---|"
  } >"$tmp/dr-replay.md"
  for f in "APS 2025-05-01|scenarios/dr/aps-2025-05-01.yaml|aps_job_power_w.csv|--field-projection $DR_DATA/aps_projection_w.csv --field-actions $DR_DATA/aps_job_power_w.csv" \
           "CAISO re-enactment|scenarios/dr/caiso-reenactment.yaml|caiso_reenactment_total_w.csv|"; do
    IFS='|' read -r label sc total extra <<<"$f"
    # shellcheck disable=SC2086
    "$bin" dr replay "$sc" --measured-total "$DR_DATA/$total" $extra --json >"$tmp/dr.json"
    jq -r --arg l "$label" '
      def p(x): if x == null then "—" else "\(x * 10000 | round / 100) %" end;
      "| \($l) | \(.minutes_above_target * 100 | round / 100) | \(p(.mean_overcut_frac)) | \(.ramp_down_s | if . == null then "—" else "\(. * 10 | round / 10) s" end) | \(.weighted_performance * 10000 | round / 10000) | \(if .all_jobs_at_tier then "yes" else "no" end) | \(p(.projected_vs_measured_rmse_frac)) | \(p(.plant_model_check.projected_vs_measured_rmse_frac)) |"' \
      "$tmp/dr.json" >>"$tmp/dr-replay.md"
  done
  {
    echo "## dr: replays of the field demonstration's events (docs/flexibility.md)"
    echo
    echo '```'
    echo "flexwatt dr replay scenarios/dr/aps-2025-05-01.yaml --measured-total $DR_DATA/aps_job_power_w.csv --field-projection $DR_DATA/aps_projection_w.csv --field-actions $DR_DATA/aps_job_power_w.csv --json"
    echo "flexwatt dr replay scenarios/dr/caiso-reenactment.yaml --measured-total $DR_DATA/caiso_reenactment_total_w.csv --json"
    echo '```'
    echo
    cat "$tmp/dr-replay.md"
    echo
  } >>"$out"
  splice docs/flexibility.md dr-replay "$tmp/dr-replay.md"
  # The targets table (seeds 1-5 of both replays, the field's total by the same rules) and the
  # variants table (which parts of the loop matter): ~60 replays, ~8 s.
  bash scripts/dr_tables.sh "$bin" "$DR_DATA" "$tmp"
  {
    echo "### dr replay against the targets (seeds 1-5; scripts/dr_tables.sh)"
    echo
    cat "$tmp/dr-targets.md"
    echo
    echo "### dr replay variants (APS)"
    echo
    cat "$tmp/dr-variants.md"
    echo
  } >>"$out"
  splice docs/flexibility.md dr-targets "$tmp/dr-targets.md"
  splice docs/flexibility.md dr-variants "$tmp/dr-variants.md"
  # docs/fleet.md's offline harness of the site loop (virtual time, no etcd), seeds 1-4, ~10 s.
  bash scripts/site_loop_sim_table.sh "$bindir/tests/test_fleet_sim" "$tmp/site-loop-sim.md"
  {
    echo "### Site loop, offline harness (docs/fleet.md; scripts/site_loop_sim_table.sh)"
    echo
    cat "$tmp/site-loop-sim.md"
    echo
  } >>"$out"
  splice docs/fleet.md site-loop-sim "$tmp/site-loop-sim.md"
  # docs/fleet.md's coordinator loop on the replay's plant: events, nodes of 4 GPUs, mixes (~2 min).
  bash scripts/dr_coordinator_table.sh "$bin" "$tmp/dr-coordinator.md"
  {
    echo "### The coordinator's planning on the replay's plant (docs/fleet.md; scripts/dr_coordinator_table.sh)"
    echo
    cat "$tmp/dr-coordinator.md"
    echo
  } >>"$out"
  splice docs/fleet.md dr-coordinator "$tmp/dr-coordinator.md"
}
# dr_fleet_row LABEL REPORT: one row of the coordinator table from a fleet-sim report.json.
dr_fleet_row() {
  jq -r --arg l "$1" '
    def p(x): "\(x * 10000 | round / 100) %";
    .dr as $d | "| \($l) | \($d.minutes_above_target * 100 | round / 100) | \(p($d.mean_overcut_frac)) / \(p($d.mean_overcut_1min_frac)) | \($d.ramp_down_s | if . == null then "—" else "\(. * 10 | round / 10) s" end) | \($d.weighted_performance * 1000 | round / 1000) / \($d.weighted_hold_performance * 1000 | round / 1000) | \(if $d.all_jobs_at_tier == null then "—" elif $d.all_jobs_at_tier then "yes" else "no" end) | \($d.pause_changes // 0) | \($d.release_recovered_frac * 1000 | round / 1000) | \(.late_ticks) |"' "$2"
}
# dr_fleet_sim DIR ARGS...: one `scripts/fleet_sim.sh --scenario dr ARGS` run into $tmp/DIR, of
# which its report.json is kept (the log: $tmp/DIR.log); a failed run fails the block.
dr_fleet_sim() {
  local d=$1
  shift
  FLEXWATT="$bin" bash scripts/fleet_sim.sh --scenario dr "$@" --out "$tmp/$d" >"$tmp/$d.log" 2>&1 ||
    { echo "results: fleet-sim $d failed: $(tail -1 "$tmp/$d.log")" >&2; exit 1; }
  find "$tmp/$d" -mindepth 1 -maxdepth 1 ! -name report.json -exec rm -rf {} +
}
# dr_fleet_arm ID: one arm of the coordinator table (DR_FLEET_ARMS) into $tmp/drfs-ID.
dr_fleet_arm() {
  local row label args
  row=$(row_of DR_FLEET_ARMS "$1")
  IFS='|' read -r _ label args <<<"$row"
  echo "results: dr through the coordinator, $label ($DR_FLEET_NODES nodes, $DR_FLEET_DURATION s)" >&2
  # shellcheck disable=SC2086
  dr_fleet_sim "drfs-$1" --nodes "$DR_FLEET_NODES" --duration-s "$DR_FLEET_DURATION" $args
}
# dr_fleet_results: docs/fleet.md's coordinator table and its docs/results.md section, from the
# arms' reports (the dr-fleet-ID blocks).
dr_fleet_results() {
  local row id label args r="" n=$DR_FLEET_NODES d=$DR_FLEET_DURATION
  {
    echo "| arm (fleet-sim --scenario dr --nodes $n --duration-s $d) | minutes above target | mean over-cut (ticks / 1-minute means) | ramp down | weighted performance (whole / hold) | every job ≥ tier | pauses + resumes | after release / twins | late ticks |"
    echo "|---|---|---|---|---|---|---|---|---|"
  } >"$tmp/dr-fleet.md"
  for row in "${DR_FLEET_ARMS[@]}"; do
    IFS='|' read -r id label args <<<"$row"
    dr_fleet_row "$label" "$tmp/drfs-$id/report.json" >>"$tmp/dr-fleet.md"
    case $args in *--mix*) ;; *) r=$(jq -r '.dr.hold_performance_at_target_on_curve // empty' "$tmp/drfs-$id/report.json") ;; esac
  done
  if [ -n "$r" ]; then
    echo "
The single job's own sweep allows a hold performance of $(echo "$r" | awk '{printf "%.3f", $1}') at the target's share (equal split; every node runs the same job). The mix: the APS event's six jobs (scenarios/dr/aps-2025-05-01.yaml) on the simulator's llama-8b-ft and mpt-13b-pt fits, tiers 0.75 / 0.9 / 0.5 (docs/fleet.md)." >>"$tmp/dr-fleet.md"
  fi
  {
    echo "## dr: the $n-node event through the coordinator (docs/fleet.md)"
    echo
    echo '```'
    echo "scripts/fleet_sim.sh --scenario dr --nodes $n --duration-s $d [--site-loop [--no-draw-curves]] [--mix aps --allocator curves --site-loop [--site-loop-reclaim]] --out DIR"
    echo '```'
    echo
    cat "$tmp/dr-fleet.md"
    echo
  } >>"$out"
  splice docs/fleet.md dr-fleet "$tmp/dr-fleet.md"
}
# dr_fleet_mix MIX: the deployed path's long runs of one mix (DR_FLEET_MIXES) on seeds 1-3, the
# three at once (each its own etcd: a fleet-sim of 64 agents takes a fraction of a core), into
# $tmp/drfs-MIX-sS: 64 agents on a real etcd, DR_FLEET_HOLD_DURATION s so that the hold
# (0.35-0.85 D) is at least 10 minutes of 1-minute means; each run's report and the site's
# trace.csv (scripts/dr_fleet_seeds.sh reads the hold's per-tick swing from it), nothing else.
# dr_fleet_mix MIX [PLANT]: PLANT replay (fleet-sim --node-plant replay: the nodes on the
# replay's plant, the jobs' measured curves with the field's noise and dips) into
# $tmp/drfr-MIX-sS; default the simulator's nodes into $tmp/drfs-MIX-sS.
dr_fleet_mix() {
  local row depth s d pids=() rc=0 plant=${2:-sim} pre=drfs
  [ "$plant" = replay ] && pre=drfr
  row=$(row_of DR_FLEET_MIXES "$1")
  depth=${row#*|}
  echo "results: dr through the coordinator, mix $1, $plant plant, seeds 1-3 at once ($DR_FLEET_NODES nodes, $DR_FLEET_HOLD_DURATION s)" >&2
  for s in 1 2 3; do
    d="$pre-$1-s$s"
    FLEXWATT="$bin" bash scripts/fleet_sim.sh --scenario dr --nodes "$DR_FLEET_NODES" \
      --duration-s "$DR_FLEET_HOLD_DURATION" --mix "$1" --dr-depth "$depth" --allocator curves \
      --site-loop --node-plant "$plant" --seed "$s" --quiet --out "$tmp/$d" >"$tmp/$d.log" 2>&1 &
    pids+=($!)
  done
  for s in 1 2 3; do
    wait "${pids[s - 1]}" || { rc=1; echo "results: fleet-sim $pre-$1-s$s failed: $(tail -1 "$tmp/$pre-$1-s$s.log")" >&2; }
    find "$tmp/$pre-$1-s$s" -mindepth 1 -maxdepth 1 ! -name report.json ! -name trace.csv -exec rm -rf {} +
  done
  return "$rc"
}
# dr_fleet_reports PREFIX: the report.json of every mix's seeds 1-3 under $tmp/PREFIX-MIX-sS.
dr_fleet_reports() {
  local row s
  for row in "${DR_FLEET_MIXES[@]}"; do
    for s in 1 2 3; do printf '%s\n' "$tmp/$1-${row%%|*}-s$s/report.json"; done
  done
}
# dr_fleet_replay_plant_results: every mix on seeds 1-3 with the nodes on the replay's plant
# (scripts/dr_fleet_seeds.sh), from the dr-fleet-rp-MIX blocks, and beside it the replay on the
# same plant, event file and target line (scripts/dr_replay_shape.sh --fleet-line; seconds).
dr_fleet_replay_plant_results() {
  local reports specs=() row event
  mapfile -t reports < <(dr_fleet_reports drfr)
  bash scripts/dr_fleet_seeds.sh "${reports[@]}" >"$tmp/dr-fleet-replay-plant.md"
  for row in "${DR_FLEET_MIXES[@]}"; do
    event=$(dr_fleet_event "${row%%|*}")
    specs+=("${row%%|*}:$event:${row#*|}")
  done
  {
    echo
    echo "The replay (\`flexwatt dr replay\`) on each mix's event file reshaped to these runs' own target line ($DR_FLEET_HOLD_DURATION s, the line from the baseline at 0.30 D to the target at 0.35 D, held to 0.85 D; \`scripts/dr_replay_shape.sh --fleet-line\`):"
    echo
    bash scripts/dr_replay_shape.sh --fleet-line "$bin" "$DR_FLEET_HOLD_DURATION" "${specs[@]}"
  } >>"$tmp/dr-fleet-replay-plant.md"
  splice docs/fleet.md dr-fleet-replay-plant "$tmp/dr-fleet-replay-plant.md"
}
# dr_fleet_event MIX: the mix's event file (what fleet-sim's --mix runs).
dr_fleet_event() {
  case $1 in
    aps) echo scenarios/dr/aps-2025-05-01.yaml ;;
    *) echo "scenarios/dr/mix-$1.yaml" ;;
  esac
}
# dr_fleet_seeds_results: every mix on seeds 1-3 (scripts/dr_fleet_seeds.sh: a row each, the
# mean and range per mix), from the dr-fleet-MIX blocks.
dr_fleet_seeds_results() {
  local reports row
  mapfile -t reports < <(dr_fleet_reports drfs)
  bash scripts/dr_fleet_seeds.sh "${reports[@]}" >"$tmp/dr-fleet-seeds.md"
  # Beside it, the replay on the same event shape (scripts/dr_replay_shape.sh; seconds).
  local specs=() event
  for row in "${DR_FLEET_MIXES[@]}"; do
    event=$(dr_fleet_event "${row%%|*}")
    specs+=("${row%%|*}:$event:${row#*|}")
  done
  {
    echo
    echo "The replay (\`flexwatt dr replay\`, its plant: the sweeps' curves with the field's noise) on each mix's event file reshaped to these runs' timeline ($DR_FLEET_HOLD_DURATION s, the target from 0.25 D, held 0.35–0.85 D; \`scripts/dr_replay_shape.sh\`):"
    echo
    bash scripts/dr_replay_shape.sh "$bin" "$DR_FLEET_HOLD_DURATION" "${specs[@]}"
  } >>"$tmp/dr-fleet-seeds.md"
  splice docs/fleet.md dr-fleet-seeds "$tmp/dr-fleet-seeds.md"
}
# dr_fleet_pause_results: a deep cut that needs pausing (12 nodes, -43 %, seed 4, 240 s): its
# pause timeline and its jobs.
dr_fleet_pause_results() {
  echo "results: dr through the coordinator, the 240 s pause run" >&2
  dr_fleet_sim drfs-pause --nodes 12 --duration-s 240 \
    --dr-depth 0.43 --mix aps --allocator curves --site-loop --seed 4
  dr_fleet_pause "$tmp/drfs-pause/report.json" >"$tmp/dr-fleet-pause.md"
  splice docs/fleet.md dr-fleet-pause "$tmp/dr-fleet-pause.md"
}
# dr_fleet_pause REPORT: the deep-cut run's pause timeline and its jobs (fleet-sim report.json).
dr_fleet_pause() {
  jq -r '
    def r(x; n): (x * n | round) / n;
    .dr as $d |
    "fleet-sim --scenario dr --nodes \(.nodes) --duration-s \(.duration_s) --dr-depth \($d.depth) --mix aps --allocator curves --site-loop --seed \(.seed) (simulated): event \(r(.duration_s * 0.25; 10))–\(r(.duration_s * 0.85; 10)) s, minutes above target \(r($d.minutes_above_target; 100)), mean over-cut \(r($d.mean_overcut_frac * 100; 100)) % (1-minute means \(r($d.mean_overcut_1min_frac * 100; 100)) %), pauses + resumes \($d.pause_changes), late ticks \(.late_ticks).",
    "",
    "| t (s) | job | |", "|---|---|---|",
    ($d.pause_events[] | "| \(.t_s) | \(.job) | \(if .paused then "pauses" else "resumes" end) |"),
    "",
    "| job | tier | paused (s) | performance (whole / hold) | ≥ tier |", "|---|---|---|---|---|",
    ($d.per_job[] | "| \(.name) | \(.tier_min) | \(r(.paused_s; 10)) | \(r(.performance; 1000)) / \(r(.hold_performance; 1000)) | \(if .performance >= .tier_min then "yes" else "no" end) |")' "$1"
}

# ---- drift: non-stationary 7B GRPO scenarios (docs/control.md, issue 30) ----
# drift_eval NAME REF CTL [EXTRA [TAG]]: the eval of scenarios/NAME.yaml (EXTRA: more eval
# flags, e.g. --shield) into $tmp/NAME[TAG].{txt,json} (a failure leaves its message as the
# text and an empty row list).
drift_eval() {
  local f="$1${5:-}" args="scenarios/$1.yaml --seeds $DRIFT_SEEDS --reference $2 --controllers $3 ${4:-}"
  echo "results: $f" >&2
  # shellcheck disable=SC2086
  if ! "$bin" eval $args --wide --threads 1 --json-out "$tmp/$f.json" >"$tmp/$f.txt" 2>"$tmp/$f.err"; then
    echo "FAILED: $(tail -1 "$tmp/$f.err")" >"$tmp/$f.txt"
    echo '{"controllers": []}' >"$tmp/$f.json"
  fi
}
# drift_table NAME REF CTL [EXTRA [TAG]]: the section of one scenario: its command, eval's table
# and the baselines table with each row's decision cost (wall us per call: mean, the worst
# call, p99; eval's decision_us lines: $2 mean, $5 label, $7 max_us, $9 p99_us).
drift_table() {
  local s="$1${5:-}" args="scenarios/$1.yaml --seeds $DRIFT_SEEDS --reference $2 --controllers $3 ${4:-}" cost
  cost=$(awk '$1 == "decision_us" { printf "%s\t%s\t%s\t%s\n", $5, $2, $7, $9 }' "$tmp/$s.txt" |
    jq -R -s 'split("\n") | map(select(length > 0) | split("\t") | {(.[0]): {mean: (.[1] | tonumber), max: ((.[2] // "") | tonumber? // null), p99: ((.[3] // "") | tonumber? // null)}}) | add // {}')
  {
    echo "### $s"
    echo
    echo '```'
    echo "flexwatt eval ${args% }"
    echo '```'
    echo
    echo '```'
    grep -v "^(wall \|^  decision_us \|^  decision_cpu_us \|^decision cost " "$tmp/$s.txt"
    echo '```'
    echo
    echo "| row | step tokens | tok/ref | recal cost s | net tok/ref | tokens/MWh vs ref | viol (offset mean) | steps violating | us/decision (mean / max / p99) |"
    echo "|---|---|---|---|---|---|---|---|---|"
    jq -r --argjson d "$(jq '.duration_s // 9000' "$tmp/$s.json" 2>/dev/null || echo 9000)" --argjson cost "$cost" '
      def pct(x): if x == null then "-" else ((x - 1) * 1000 | round / 10 | tostring) + " %" end;
      def us1(x): if x == null then "-" elif x < 10 then (x * 100 | round / 100 | tostring) else (x | round | tostring) end;
      def us(c): if c == null then "-" else "\(us1(c.mean)) / \(us1(c.max)) / \(us1(c.p99))" end;
      .controllers[] | (.notes.recalibration_cost_s // 0) as $c |
      "| `\(.label // .name)`\(if ((.notes.kind // "") | test("hindsight")) then " (HINDSIGHT: upper ref.)" else "" end) | \(.progress.completed_step_tokens.mean | round) | \(pct(.vs_reference.completed_step_tokens)) | \($c | round) | \(if .vs_reference == null then "-" else pct(.vs_reference.completed_step_tokens * $d / ($d + $c)) end) | \(pct(.vs_reference.tokens_per_mwh)) | \(.violation_rate_offsets.rate.mean * 10000 | round / 100) % | \(.steps_violating.mean * 1000 | round / 10) % | \(us($cost[.label // .name])) |"' \
      "$tmp/$s.json"
    echo
  } >>"$out"
}
# The drift runs, two evals at a time (one thread each; a block per pair, so that an interrupted
# results-all resumes between them), then the stationary mpc run; block drift writes the tables.
drift_runs_7b_1() {
  drift_eval grpo-7b-a100-drift static:calib_s=600 "$DRIFT_CTL" &
  drift_eval grpo-7b-a100-drift-u static:calib_s=600 "$DRIFT_CTL" &
  wait
}
drift_runs_7b_2() {
  drift_eval grpo-7b-a100-drift-decline static:calib_s=600 "$DRIFT_CTL" &
  drift_eval grpo-7b-a100-budget-steps static:calib_s=600 "$STEPS_CTL" &
  wait
}
drift_runs_72b_1() {
  drift_eval grpo-72b-a100x4-drift static:calib_s=3600 "$DRIFT72_CTL" &
  drift_eval grpo-72b-a100x4-drift-u static:calib_s=3600 "$DRIFT72_CTL" &
  wait
}
drift_runs_72b_2() {
  drift_eval grpo-72b-a100x4-drift-decline static:calib_s=3600 "$DRIFT72_CTL" &
  drift_eval fleet-16xa100-churn static:calib_s=1800 "$CHURN_CTL" &
  wait
}
drift_runs_shield_1() {
  drift_eval fleet-16xa100-churn static:calib_s=1800 "$CHURN_SH_CTL" --shield-on-caps -shield &
  drift_eval grpo-7b-a100-phase-mix static:calib_s=600 "$PHASE_CTL" &
  wait
}
drift_runs_shield_2() {
  drift_eval grpo-7b-a100-phase-mix static:calib_s=600 "$PHASE_SH_CTL" --shield-on-caps -shield &
  drift_eval fleet-16xa100-straggler static:calib_s=1800 "$CHURN_SH_CTL" --shield-on-caps -shield &
  wait
}
# Stationary: mpc against the joint-grid fixed setting calibrated on whole episodes.
drift_stationary_args() { echo "scenarios/grpo-7b-a100.yaml --seeds $DRIFT_SEEDS --reference static --controllers $DRIFT_STAT_CTL"; }
drift_runs_stationary() {
  echo "results: grpo-7b-a100 (stationary)" >&2
  # shellcheck disable=SC2046
  "$bin" eval $(drift_stationary_args) --threads 2 >"$tmp/grpo-7b-a100-stationary.txt" 2>&1 || true
}
# drift_results: docs/results.md's non-stationary sections from the drift-* blocks' runs.
drift_results() {
  local s
  {
    echo "## Non-stationary scenarios: 7B GRPO with drifting completion lengths"
    echo
    echo "Simulated. Reference (tok/ref) = \`static:calib_s=600\`: the joint fixed setting calibrated"
    echo "once on the first 600 s of the run (calibration seeds 1000001-1000002), the operator's"
    echo "information. \`recal_s=1800\` rows are recalibrated every 30 min on the workload as it is then;"
    echo "\`net tok/ref\` counts their recalibrations' lost work (\`recalibration_cost_s\`: calibration"
    echo "episodes x 600 s of the node's time; net = tokens x D / (D + cost)). \`static:recal_s=1800\`"
    echo "(calib_s 0) is the HINDSIGHT per-segment fixed setting: an upper reference no one can deploy."
    echo "\`lookahead\` clones the simulator (a reference, never deployable). \`mpc\` plans on a twin"
    echo "fitted online from the run's own telemetry (docs/control.md \"mpc\"): its searches run on"
    echo "the twin, so they cost CPU (\`plans_by_seed\` in its notes), not node time. \`us/decision\`:"
    echo "wall microseconds per call of the row's update() in the same run: the mean, the worst call"
    echo "and the 99th percentile (one thread per scenario, on a shared machine; mpc's off-thread search"
    echo "is not in it, but the wait for it at the decision where a plan takes effect is; the issue's"
    echo "target is <= 10 ms per decision at 0.5 s ticks: judged on the worst call; eval's decision_us"
    echo "lines also give each row's thread CPU per call: docs/control.md). Evaluation seeds 1-$DRIFT_SEEDS."
    echo
  } >>"$out"
  local scen="grpo-7b-a100-drift grpo-7b-a100-drift-u grpo-7b-a100-drift-decline"
  local scen72="grpo-72b-a100x4-drift grpo-72b-a100x4-drift-u grpo-72b-a100x4-drift-decline"
  for s in $scen; do drift_table "$s" static:calib_s=600 "$DRIFT_CTL"; done
  {
    echo "### 72B GRPO with drifting completion lengths"
    echo
    echo "grpo-72b-a100x4 over 33.3 h with the three shapes (docs/simulator.md); reference"
    echo "\`static:calib_s=3600\` (the joint fixed setting calibrated on the first hour), recalibration"
    echo "every 20000 s, the hindsight per 40000 s segment; the shipped 72B policy was trained on the"
    echo "rollout scenario. mpc with hourly replans on 5400 s twin episodes."
    echo
  } >>"$out"
  for s in $scen72; do drift_table "$s" static:calib_s=3600 "$DRIFT72_CTL"; done
  {
    echo "### Unannounced budget steps and fleet churn"
    echo
    echo "grpo-7b-a100-budget-steps: the operator's fixed setting recalibrated every 1800 s learns of a"
    echo "step at its next recalibration; \`static:recal_s=3000\` is the hindsight per budget level;"
    echo "plain \`static\` is calibrated on whole episodes against the whole schedule (FORESIGHT)."
    echo "fleet-16xa100-churn: jobs arrive and leave (scenario file); reference \`static:calib_s=1800\`."
    echo
  } >>"$out"
  drift_table grpo-7b-a100-budget-steps static:calib_s=600 "$STEPS_CTL"
  drift_table fleet-16xa100-churn static:calib_s=1800 "$CHURN_CTL"
  {
    echo "fleet-16xa100-churn with the budget shield on every row, on the caps (\`--shield-on-caps\`): the"
    echo "same-information baseline for an unannounced change is the once-calibrated setting plus the shield."
    echo
  } >>"$out"
  drift_table fleet-16xa100-churn static:calib_s=1800 "$CHURN_SH_CTL" --shield-on-caps -shield
  {
    echo "### Phase-mix shifts and stragglers"
    echo
    echo "grpo-7b-a100-phase-mix: data-loader stalls (8 s after every 24 s of work) for 3000 s, then"
    echo "none, then a 60 s checkpoint every 300 s (scenario file); the 7B family's rows but the"
    echo "look-ahead; then again with the budget shield on every row, on the caps (\`--shield-on-caps\`,"
    echo "the same-information baseline for an unannounced change). fleet-16xa100-straggler: a 72B node"
    echo "1.5x slower 3600-7200 s, a 14B pair 2x slower 5400-9000 s (scenario file), every row shielded."
    echo
  } >>"$out"
  drift_table grpo-7b-a100-phase-mix static:calib_s=600 "$PHASE_CTL"
  drift_table grpo-7b-a100-phase-mix static:calib_s=600 "$PHASE_SH_CTL" --shield-on-caps -shield
  drift_table fleet-16xa100-straggler static:calib_s=1800 "$CHURN_SH_CTL" --shield-on-caps -shield
  # Stationary: mpc against the joint-grid fixed setting calibrated on whole episodes.
  {
    echo "### grpo-7b-a100 (stationary)"
    echo
    echo '```'
    echo "flexwatt eval $(drift_stationary_args)"
    echo '```'
    echo
    echo '```'
    grep -v "^(wall " "$tmp/grpo-7b-a100-stationary.txt" || true
    echo '```'
    echo
  } >>"$out"
}

# ---- the blocks, in the order `make results` runs them ----
BLOCK_ORDER=()
declare -A B_SET=() B_FN=() B_WRITES=() B_INPUTS=() B_BINS=() B_DEPS=()
# block NAME SET FUNCTION WRITES INPUTS BINS DEPS: registers a block (run in registration order).
#   SET       results (plain `make results`, and results-all) or all (`make results-all` only)
#   FUNCTION  the shell function that runs it, with its arguments
#   WRITES    the markers it splices, DOC:NAME (README.md alone: its unnamed results markers;
#             docs/results.md:NAME: its section of docs/results.md, written through $out)
#   INPUTS    the files and directories it reads (hashed into its key)
#   BINS      the binaries it runs beside FLEXWATT_BIN, relative to FLEXWATT_BIN's directory
#   DEPS      the blocks whose outputs it reads (copied into its work directory first)
block() {
  [ $# -eq 7 ] || { echo "results: block ${1:-?}: 7 fields expected, $# given" >&2; exit 2; }
  [[ -v B_SET[$1] ]] || BLOCK_ORDER+=("$1")
  local -a w_ i_ b_ d_
  read -ra w_ <<<"$4"; read -ra i_ <<<"$5"; read -ra b_ <<<"$6"; read -ra d_ <<<"$7"
  B_SET[$1]=$2 B_FN[$1]=$3 B_WRITES[$1]=${w_[*]} B_INPUTS[$1]=${i_[*]} B_BINS[$1]=${b_[*]} B_DEPS[$1]=${d_[*]}
}
# blocks_reset: no block registered (for RESULTS_BLOCKS_FILE, below).
blocks_reset() { BLOCK_ORDER=(); B_SET=(); B_FN=(); B_WRITES=(); B_INPUTS=(); B_BINS=(); B_DEPS=(); }

# The eval runs behind the README's table, cut so that no block runs much over 15 minutes on 2
# cores; headline writes the table from their JSONs.
block controllers-7b results "controllers_runs 7b-knobs 7b-cap" \
  "docs/results.md:controllers-7b" "$SIM_INPUTS" "" ""
block controllers-7b-budget results "controllers_runs 7b-cap-minus10 7b-cap-plus10" \
  "docs/results.md:controllers-7b-budget" "$SIM_INPUTS" "" ""
block controllers-grid results \
  "controllers_runs 7b-grid-event 7b-grid-event-scheduled 7b-grid-event-unannounced 7b-grid-event-unannounced-knob-shield" \
  "docs/results.md:controllers-grid" "$SIM_INPUTS" "" ""
block controllers-72b-long results "controllers_runs 72b-long" \
  "docs/results.md:controllers-72b-long" "$SIM_INPUTS" "" ""
block controllers-72b results "controllers_runs 72b" \
  "docs/results.md:controllers-72b" "$SIM_INPUTS" "" ""
block controllers-fleet results "controllers_runs fleet" \
  "docs/results.md:controllers-fleet" "$SIM_INPUTS" "" ""
block headline results headline_results \
  "README.md README.md:readme-winners README.md:readme-7b-knobs README.md:readme-7b-cap README.md:readme-grid-event README.md:readme-72b README.md:readme-fleet docs/results.md:headline docs/control.md:static-costs" \
  "scripts/readme_snippets.py" "" \
  "controllers-7b controllers-7b-budget controllers-grid controllers-72b-long controllers-72b controllers-fleet"
block caps results caps_block \
  "docs/results.md:caps docs/caps.md:caps-caps-pipeline-imbalance-a100x8 docs/caps.md:caps-caps-moe-imbalance-a100x8 docs/caps.md:caps-caps-pipeline-imbalance-a100x64" \
  "$SIM_INPUTS" "" ""
block caps-balanced all caps_balanced_block \
  "docs/results.md:caps-balanced docs/caps.md:caps-caps-pretrain-a100x1 docs/caps.md:caps-caps-pretrain-a100x8 docs/caps.md:caps-caps-pretrain-a100x64 docs/caps.md:caps-caps-pretrain-h100x8 docs/caps.md:caps-caps-pretrain-h200x8 docs/caps.md:caps-recheck" \
  "$SIM_INPUTS" "" ""
block caps-pipeline all caps_pipeline_block \
  "docs/results.md:caps-pipeline docs/caps.md:caps-pipeline" "$SIM_INPUTS" "" ""
block flexibility results flex_results \
  "docs/results.md:flexibility docs/flexibility.md:flex-pfi docs/flexibility.md:flex-study docs/flexibility.md:flex-study-8 docs/flexibility.md:flex-study-sla docs/flexibility.md:flex-dr" \
  "$SIM_INPUTS" "" ""
block refine all refine_results \
  "docs/results.md:refine docs/control.md:static-refine" "$SIM_INPUTS" "" ""
block calib results calibration_results \
  "docs/simulator.md:calibration" "$SIM_INPUTS scripts/calib_table.py" "tests/test_sim" ""
block pipeline-plan results pipeline_plan_results \
  "docs/caps.md:pipeline-perseus docs/caps.md:pipeline-plan docs/caps.md:pipeline-plan-equal-time" \
  "data/perseus scripts/pipeline_table.sh" "" ""
block caps-adapt results caps_adapt_results \
  "docs/caps.md:caps-adapt" "$SIM_INPUTS scripts/caps_adapt_table.sh" "" "caps"
block caps-training results caps_training_results \
  "docs/caps.md:caps-training" "policies scripts/capnet_training_table.py" "" ""
block authority results authority_results \
  "docs/operators.md:authority-72b docs/operators.md:authority-72b-rollout docs/operators.md:authority-7b" \
  "$SIM_INPUTS scripts/authority_table.sh" "" ""
block stability results stability_results \
  "docs/stabilization.md:stability-1024 docs/stabilization.md:stability-16384 docs/stabilization.md:stability-aggregation" \
  "scenarios" "tests/test_sim" ""
block fit-cases results fit_cases_results \
  "docs/simulator.md:fit-cases" "scripts/fit_cases_table.py" "tests/test_sim" ""
block bench-capnet results "bench_timings capnet|capnet_bench|caps.md" \
  "docs/caps.md:bench-capnet" "scripts/bench_timings.py" "bench/capnet_bench" ""
block bench-timings all bench_timings_all \
  "docs/control.md:bench-mpc docs/flexibility.md:bench-allocation docs/agent-api.md:bench-agent" \
  "scripts/bench_timings.py" "bench/mpc_bench bench/allocation_bench bench/agent_bench" ""
block bench-lookahead all bench_lookahead_results \
  "docs/control.md:bench-lookahead" "$SIM_INPUTS scripts/bench_timings.py" "" ""
block fleet-sim all fleet_sim_results \
  "docs/fleet.md:fleet-sim-site docs/fleet.md:fleet-scale" \
  "scenarios scripts/fleet_sim_table.sh scripts/fleet_sim.sh scripts/fleet_scale_table.py" "bench/fleet_split_bench" ""
block fleet-faults all fleet_faults_results \
  "docs/fleet.md:fleet-faults" "scripts/fleet_faults_table.sh scripts/fleet_faults.sh" "" ""
block caps-targets all caps_targets_results \
  "docs/caps.md:caps-targets" "policies scripts/caps_targets.sh" "bench/capnet_bench" "caps caps-balanced"
block bench-engines all bench_results \
  "docs/analysis.md:bench-engines docs/analysis.md:bench-floor" \
  "bench/analyze_vs_pandas.py scripts/bench_table.sh scripts/parse_floor_table.sh" "bench/analyze_bench bench/parse_floor" ""
block pipeline-validate all pipeline_validate_results \
  "docs/simulator.md:pipeline-validate-gpu-model docs/simulator.md:pipeline-validate docs/simulator.md:pipeline-validate-profiled" \
  "$PERSEUS_DATA data/perseus/stage_work.csv scripts/pipeline_validate_table.py" "" ""
block dr results dr_results \
  "docs/results.md:dr docs/flexibility.md:dr-replay docs/flexibility.md:dr-targets docs/flexibility.md:dr-variants docs/fleet.md:site-loop-sim docs/fleet.md:dr-coordinator" \
  "scenarios $DR_DATA scripts/dr_tables.sh scripts/site_loop_sim_table.sh scripts/dr_coordinator_table.sh" "tests/test_fleet_sim" ""
# The coordinator runs (8 minutes each at the default), then the tables.
for arm in "${DR_FLEET_ARMS[@]}"; do
  block "dr-fleet-${arm%%|*}" all "dr_fleet_arm ${arm%%|*}" "" "scenarios scripts/fleet_sim.sh" "" ""
done
block dr-fleet all dr_fleet_results "docs/results.md:dr-fleet docs/fleet.md:dr-fleet" "" "" \
  "$(for arm in "${DR_FLEET_ARMS[@]}"; do printf 'dr-fleet-%s ' "${arm%%|*}"; done)"
block dr-fleet-aps all "dr_fleet_mix aps" "" "scenarios scripts/fleet_sim.sh" "" ""
block dr-fleet-training-heavy all "dr_fleet_mix training-heavy" "" "scenarios scripts/fleet_sim.sh" "" ""
block dr-fleet-inference-heavy all "dr_fleet_mix inference-heavy" "" "scenarios scripts/fleet_sim.sh" "" ""
block dr-fleet-seeds all dr_fleet_seeds_results "docs/fleet.md:dr-fleet-seeds" "scenarios data scripts/dr_fleet_seeds.sh scripts/dr_replay_shape.sh" "" \
  "dr-fleet-aps dr-fleet-training-heavy dr-fleet-inference-heavy"
block dr-fleet-rp-aps all "dr_fleet_mix aps replay" "" "scenarios data scripts/fleet_sim.sh" "" ""
block dr-fleet-rp-training-heavy all "dr_fleet_mix training-heavy replay" "" "scenarios data scripts/fleet_sim.sh" "" ""
block dr-fleet-rp-inference-heavy all "dr_fleet_mix inference-heavy replay" "" "scenarios data scripts/fleet_sim.sh" "" ""
block dr-fleet-replay-plant all dr_fleet_replay_plant_results "docs/fleet.md:dr-fleet-replay-plant" "scenarios data scripts/dr_fleet_seeds.sh scripts/dr_replay_shape.sh" "" \
  "dr-fleet-rp-aps dr-fleet-rp-training-heavy dr-fleet-rp-inference-heavy"
block dr-fleet-pause all dr_fleet_pause_results "docs/fleet.md:dr-fleet-pause" "scenarios scripts/fleet_sim.sh" "" ""
# The non-stationary runs (two evals at a time), then their tables.
block drift-7b-1 all drift_runs_7b_1 "" "$SIM_INPUTS" "" ""
block drift-7b-2 all drift_runs_7b_2 "" "$SIM_INPUTS" "" ""
block drift-72b-1 all drift_runs_72b_1 "" "$SIM_INPUTS" "" ""
block drift-72b-2 all drift_runs_72b_2 "" "$SIM_INPUTS" "" ""
block drift-shield-1 all drift_runs_shield_1 "" "$SIM_INPUTS" "" ""
block drift-shield-2 all drift_runs_shield_2 "" "$SIM_INPUTS" "" ""
block drift-stationary all drift_runs_stationary "" "$SIM_INPUTS" "" ""
block drift all drift_results "docs/results.md:drift" "" "" \
  "drift-7b-1 drift-7b-2 drift-72b-1 drift-72b-2 drift-shield-1 drift-shield-2 drift-stationary"
unset arm

# The test hook (tests/cli/results_blocks.sh): a file that replaces the blocks above with its own
# (blocks_reset, then block lines and their functions). Not for making results.
if [ -n "${RESULTS_BLOCKS_FILE:-}" ]; then
  echo "results: the blocks of RESULTS_BLOCKS_FILE=$RESULTS_BLOCKS_FILE (a test hook)" >&2
  # shellcheck disable=SC1090
  source "$RESULTS_BLOCKS_FILE"
fi

# ---- the driver ----
cache=.results-cache
results_md=docs/results.md

# marker_lines NAME: sets mark_b and mark_e, the begin and end lines of marker NAME (empty: the
# README's unnamed markers).
marker_lines() {
  if [ -n "$1" ]; then mark_b="<!-- results:$1:begin -->" mark_e="<!-- results:$1:end -->"
  else mark_b="<!-- results:begin -->" mark_e="<!-- results:end -->"; fi
}
# doc_has_markers DOC NAME: DOC holds NAME's begin and end lines, as many of each.
doc_has_markers() {
  local nb ne
  [ -f "$1" ] || return 1
  marker_lines "$2"
  nb=$(grep -cxF -- "$mark_b" "$1" || true) ne=$(grep -cxF -- "$mark_e" "$1" || true)
  [ "$nb" -ge 1 ] && [ "$nb" = "$ne" ]
}
# block_writes BLOCK DOC NAME: BLOCK declares DOC:NAME (README.md alone: NAME empty).
block_writes() {
  local w
  for w in ${B_WRITES[$1]}; do
    if [ -z "$3" ]; then [ "$w" = "$2" ] && return 0; else [ "$w" = "$2:$3" ] && return 0; fi
  done
  return 1
}
# results_md_marker BLOCK: the name of BLOCK's section of docs/results.md (none: exit 1).
results_md_marker() {
  local w
  for w in ${B_WRITES[$1]}; do
    case $w in "$results_md":*) echo "${w#*:}"; return 0 ;; esac
  done
  return 1
}
# splice_into DOC NAME FILE: replaces the lines between NAME's markers in DOC with FILE.
splice_into() {
  marker_lines "$2"
  awk -v table="$3" -v b="$mark_b" -v e="$mark_e" '
    $0 == b { print; while ((getline line < table) > 0) print line; close(table); skip = 1; next }
    $0 == e { skip = 0 }
    !skip { print }' "$1" >"$scratch/splice"
  cp "$scratch/splice" "$1"
}
# apply_splices ENTRY: splices every table of a block's cache entry (all its docs' markers are
# checked first, so that a block is spliced whole or not at all).
apply_splices() {
  local doc mk f
  while IFS='|' read -r doc mk f; do
    doc_has_markers "$doc" "$mk" || { echo "results: $doc has no marker ${mk:-(unnamed)}" >&2; return 1; }
  done <"$1/splices.tsv"
  while IFS='|' read -r doc mk f; do splice_into "$doc" "$mk" "$1/$f"; done <"$1/splices.tsv"
}

# results_md_header: docs/results.md above its first marker.
results_md_header() {
  echo "# Results (simulated; regenerated by \`make results\`)"
  echo
  echo "Every figure below is simulated and was written by \`scripts/results.sh\` ($(git rev-parse --short HEAD 2>/dev/null || echo unknown))."
  echo "Each section is one block of it (\`scripts/results.sh --list\`; \`make results BLOCK=NAME\` regenerates"
  echo "one); the comment at the top of a section names the commit and the binary that wrote it."
  echo "Evaluation seeds 1–5; calibration seeds 1000001–1000002; the policies were trained on seeds ≥ 2^41."
  echo "Columns: \`step tokens\` = tokens of completed steps (the headline); \`viol win\` = share of"
  echo "tumbling budget windows over the budget, mean over 6 evenly spaced window offsets;"
  echo "\`slide win\` = share of samples whose trailing window mean exceeded it; \`steps viol\` = share"
  echo "of completed steps during which the trailing window mean exceeded it; \`tok/ref\` = step"
  echo "tokens over the row's reference (\`--reference auto\`: the joint static over the actuators the"
  echo "row's controller claims, searched on the calibration seeds; each table's header names it per"
  echo "row); \`tok/look\` = over the look-ahead reference (per seed,"
  echo "the better of a greedy search and every fixed setting of its actuators: a reference, not a"
  echo "bound; flexwatt quotes no bound: docs/control.md, \"No token bound\", says why). The aligned"
  echo "(t = 0) rates are a detail in the second table. \`setup GPU-h\` = what the arm ran before"
  echo "deployment, in simulated GPU-hours of the job (static: its calibration episodes on the"
  echo "calibration seeds; ppo: training decisions × decision period × GPUs; zeus profiles inside"
  echo "its run, so its tokens already pay for it)."
  echo "The same tables as a page: \`flexwatt eval --html FILE\` and \`make demo\`'s \`report.html\` (the trade-off"
  echo "of step tokens against \`viol win\` per controller, the table, the windows curve, \`power.svg\`); the"
  echo "demo's page: [report.png](report.png) (docs/agent.md, \"Dashboard\")."
  echo
}
# ensure_results_md: docs/results.md exists (else: its header) and holds every block's section
# markers (a missing one is added, empty, after the section of the block before it).
ensure_results_md() {
  local n mk prev="" after
  [ -f "$results_md" ] || results_md_header >"$results_md"
  for n in "${BLOCK_ORDER[@]}"; do
    mk=$(results_md_marker "$n") || continue
    if ! doc_has_markers "$results_md" "$mk"; then
      after=""
      [ -z "$prev" ] || after="<!-- results:$prev:end -->"
      awk -v after="$after" -v b="<!-- results:$mk:begin -->" -v e="<!-- results:$mk:end -->" '
        !done && after != "" && $0 == after { print; print b; print e; done = 1; next }
        !done && after == "" && /^<!-- results:[^ ]+:begin -->$/ { print b; print e; done = 1 }
        { print }
        END { if (!done) { print b; print e } }' "$results_md" >"$scratch/rmd"
      cp "$scratch/rmd" "$results_md"
      echo "results: $results_md: added the (empty) section of block $n" >&2
    fi
    prev=$mk
  done
}
# rewrite_results_md_header: the header above docs/results.md's first marker, written anew.
rewrite_results_md_header() {
  { results_md_header; awk 'f || /^<!-- results:[^ ]+:begin -->$/ { f = 1; print }' "$results_md"; } >"$scratch/rmd"
  cp "$scratch/rmd" "$results_md"
}

# hash_path PATH: sets `hashed` to the sha256 of a file, or of a directory's files (their paths
# and contents), or "missing"; remembered for the run.
declare -A hashes=()
hash_path() {
  if [[ -v hashes[$1] ]]; then hashed=${hashes[$1]}; return 0; fi
  if [ -f "$1" ]; then hashed=$(sha256sum <"$1" | cut -c1-64)
  elif [ -d "$1" ]; then
    hashed=$(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum | sha256sum | cut -c1-64)
  else hashed=missing; fi
  hashes[$1]=$hashed
}
# fn_closure FUNCTION: the text of FUNCTION and of every function of this script it names,
# transitively.
fn_closure() {
  local -a todo=("$1")
  local seen=" " f w
  while [ ${#todo[@]} -gt 0 ]; do
    f=${todo[0]} todo=("${todo[@]:1}")
    case $seen in *" $f "*) continue ;; esac
    seen="$seen$f "
    declare -f "$f"
    for w in $(declare -f "$f" | grep -oE '[A-Za-z_][A-Za-z0-9_]*' | LC_ALL=C sort -u); do
      case $seen in *" $w "*) continue ;; esac
      if declare -F "$w" >/dev/null; then todo+=("$w"); fi
    done
  done
}
# setting_text NAME ARG...: a setting of this script as text. An array of "id|..." rows (runs,
# DR_FLEET_ARMS) gives only the rows that the block function's arguments name, when they name
# any (so that a row added for one block leaves the others' keys alone).
setting_text() {
  local -n v_=$1
  local name=$1 r a picked=0
  shift
  if [[ "$(declare -p "$name")" == "declare -a"* ]]; then
    for r in "${v_[@]}"; do
      for a in "$@"; do [ "${r%%|*}" = "$a" ] && { printf '%s[%s]\n' "$name" "$r"; picked=1; }; done
    done
    [ "$picked" = 1 ] || printf '%s=(%s)\n' "$name" "$(printf '%q ' "${v_[@]}")"
  else
    printf '%s=%q\n' "$name" "$v_"
  fi
}
# block_key_text BLOCK: what BLOCK's key is the sha256 of.
block_key_text() {
  local n=$1 text w p d
  local -a fnv
  read -ra fnv <<<"${B_FN[$n]}"
  text=$(fn_closure "${fnv[0]}")
  printf 'block %s\nset %s\nfunction %s\nwrites %s\ninputs %s\nbinaries %s\ndeps %s\n' "$n" \
    "${B_SET[$n]}" "${B_FN[$n]}" "${B_WRITES[$n]}" "${B_INPUTS[$n]}" "${B_BINS[$n]}" "${B_DEPS[$n]}"
  printf '%s\n' "$text"
  for w in $(printf '%s\n%s\n' "$text" "${B_FN[$n]}" | grep -oE '[A-Za-z_][A-Za-z0-9_]*' | LC_ALL=C sort -u); do
    case $config_vars in *" $w "*) setting_text "$w" "${fnv[@]:1}" ;; esac
  done
  hash_path "$bin"; echo "binary FLEXWATT_BIN $hashed"
  for p in ${B_BINS[$n]}; do hash_path "$bindir/$p"; echo "binary $p $hashed"; done
  for p in ${B_INPUTS[$n]}; do hash_path "$p"; echo "input $p $hashed"; done
  for d in ${B_DEPS[$n]}; do echo "dependency $d $(cat "${entry_of[$d]}/outputs.sha256")"; done
}

mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

# record BLOCK STATUS WALL_S: a line of the summary and of .results-cache/timings.tsv.
summary=()
record() {
  summary+=("$1|$2|$3")
  [ -s "$cache/timings.tsv" ] || printf 'date\tcommit\tblock\tstatus\twall_s\tkey\n' >"$cache/timings.tsv"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$1" "$2" "$3" \
    "${key_of[$1]:-}" >>"$cache/timings.tsv"
}
print_summary() {
  local s n st w total=0
  echo "results: summary (wall time per block; .results-cache/timings.tsv keeps them)" >&2
  printf '  %-24s %-22s %s\n' block status wall >&2
  for s in "${summary[@]}"; do
    IFS='|' read -r n st w <<<"$s"
    total=$((total + w))
    printf '  %-24s %-22s %s\n' "$n" "$st" "$(mmss "$w")" >&2
  done
  printf '  %-24s %-22s %s\n' total "" "$(mmss "$total")" >&2
}

# run_block BLOCK: runs BLOCK in a staging directory, then caches its entry (a rename) and
# splices it; sets block_wall. Non-zero when the block failed (its entry is not written).
run_block() {
  local n=$1 stage log rc t0 d mk doc f w entry old
  local -a fnv
  stage=$root/$cache/.staging/$n
  rm -rf "$stage"
  mkdir -p "$stage/work" "$stage/splice" "$cache/logs"
  : >"$stage/splices.tsv"
  : >"$stage/section.md"
  for d in ${B_DEPS[$n]}; do cp -a "${entry_of[$d]}/work/." "$stage/work/"; done
  log=$cache/logs/$n.log
  read -ra fnv <<<"${B_FN[$n]}"
  t0=$(date +%s)
  # (called with errexit off, which the block's subshell turns on for the block)
  (
    set -e
    tmp=$stage/work out=$stage/section.md cur_block=$n cur_stage=$stage
    "${fnv[@]}"
  ) 9>&- 2>&1 | tee "$log" >&2
  rc=${PIPESTATUS[0]}
  block_wall=$(($(date +%s) - t0))
  block_failed() {
    echo "results: block $n FAILED ($1) after $(mmss "$block_wall"); its log: $log" >&2
    return 1
  }
  [ "$rc" = 0 ] || { block_failed "exit status $rc"; return 1; }
  # Its section of docs/results.md, headed by what wrote it.
  if mk=$(results_md_marker "$n"); then
    hash_path "$bin"
    { echo "<!-- block $n: scripts/results.sh at commit $commit, $(date -u +%Y-%m-%d), FLEXWATT_BIN sha256 ${hashed:0:16}; make results BLOCK=$n -->"
      cat "$stage/section.md"; } >"$stage/splice/section.md"
    printf '%s|%s|splice/section.md\n' "$results_md" "$mk" >>"$stage/splices.tsv"
  elif [ -s "$stage/section.md" ]; then
    block_failed "it wrote docs/results.md text but declares no $results_md:NAME"; return 1
  fi
  for w in ${B_WRITES[$n]}; do
    case $w in *:*) doc=${w%%:*} mk=${w#*:} ;; *) doc=$w mk="" ;; esac
    grep -qxF -- "$doc|$mk|" <(cut -d'|' -f1-2 "$stage/splices.tsv" | sed 's/$/|/') ||
      { block_failed "it declares $w but did not splice it"; return 1; }
    doc_has_markers "$doc" "$mk" || { block_failed "$doc has no marker ${mk:-(unnamed)}"; return 1; }
  done
  (cd "$stage" && find . -type f ! -name outputs.sha256 -print0 | LC_ALL=C sort -z | xargs -0 sha256sum |
    sha256sum | cut -c1-64) >"$stage/outputs.sha256"
  cp "$scratch/key-$n" "$stage/key.txt"
  printf 'block\t%s\nwall_s\t%s\ndate\t%s\ncommit\t%s\n' "$n" "$block_wall" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" >"$stage/meta.tsv"
  entry=$cache/$n/${key_of[$n]}
  mkdir -p "$cache/$n"
  old=""
  if [ -e "$entry" ]; then old=$cache/.staging/$n.old; rm -rf "$old"; mv "$entry" "$old"; fi
  mv "$stage" "$entry"
  [ -z "$old" ] || rm -rf "$old"
  # The three newest entries of the block are kept.
  find "$cache/$n" -mindepth 1 -maxdepth 1 -printf '%T@ %f\n' | sort -rn | tail -n +4 | cut -d' ' -f2 |
    while read -r f; do rm -rf "${cache:?}/$n/$f"; done
  entry_of[$n]=$entry
  apply_splices "$entry" || { block_failed "its tables were not spliced"; return 1; }
}

list_blocks() {
  local n last users d u
  printf '%-24s %-9s %-7s %s\n' block "set" "last" "writes (DOC:MARKER; README.md: its results:begin/end); [reads]"
  for n in "${BLOCK_ORDER[@]}"; do
    last=""
    if [ -s "$cache/timings.tsv" ]; then
      last=$(awk -F'\t' -v b="$n" '$3 == b && $4 == "done" { w = $5 }
        END { if (w != "") printf "%d:%02d", w / 60, w % 60 }' "$cache/timings.tsv")
    fi
    users=""
    for u in "${BLOCK_ORDER[@]}"; do
      for d in ${B_DEPS[$u]}; do [ "$d" = "$n" ] && users="$users $u"; done
    done
    printf '%-24s %-9s %-7s %s%s\n' "$n" "$([ "${B_SET[$n]}" = results ] && echo results || echo all-only)" \
      "${last:--}" "${B_WRITES[$n]:-(none: outputs for$users)}" "${B_DEPS[$n]:+ [reads: ${B_DEPS[$n]}]}"
  done
}

# The blocks' table must hold together (a block line's mistake is exit 2).
declare -A registered=()
for n in "${BLOCK_ORDER[@]}"; do
  case ${B_SET[$n]} in results | all) ;; *) usage_error "block $n: set '${B_SET[$n]}' is neither results nor all" ;; esac
  read -ra fnv <<<"${B_FN[$n]}"
  declare -F "${fnv[0]:-}" >/dev/null || usage_error "block $n: no function '${fnv[0]:-}'"
  for d in ${B_DEPS[$n]}; do
    [[ -v registered[$d] ]] || usage_error "block $n reads block $d, which is not a block before it"
  done
  sections=0
  for w in ${B_WRITES[$n]}; do case $w in "$results_md":*) sections=$((sections + 1)) ;; esac; done
  [ "$sections" -le 1 ] || usage_error "block $n: more than one $results_md section"
  registered[$n]=1
done

if [ "$list" = 1 ]; then list_blocks; exit 0; fi

# The blocks to run: the ones named (--block), or every plain one (with --all: every one); the
# blocks they read join them (cached, else run).
declare -A selected=() needed=()
if [ -n "$sel" ]; then
  IFS=, read -ra want <<<"$sel"
  for n in "${want[@]}"; do
    [ -n "$n" ] || continue
    [[ -v B_SET[$n] ]] || usage_error "unknown block '$n' (scripts/results.sh --list names them)"
    selected[$n]=1
  done
  [ ${#selected[@]} -gt 0 ] || usage_error "--block: no block named"
else
  for n in "${BLOCK_ORDER[@]}"; do
    if [ "$all" = 1 ] || [ "${B_SET[$n]}" = results ]; then selected[$n]=1; fi
  done
fi
for ((i = ${#BLOCK_ORDER[@]} - 1; i >= 0; i--)); do
  n=${BLOCK_ORDER[i]}
  if [[ -v selected[$n] ]] || [[ -v needed[$n] ]]; then
    for d in ${B_DEPS[$n]}; do needed[$d]=1; done
  fi
done
plan=()
for n in "${BLOCK_ORDER[@]}"; do
  if [[ -v selected[$n] ]] || [[ -v needed[$n] ]]; then plan+=("$n"); fi
done

[ -x "$bin" ] || usage_error "FLEXWATT_BIN $bin: no such executable (make build first)"
mkdir -p "$cache"
exec 9>"$cache/lock"
flock -n 9 || { echo "results: another scripts/results.sh runs here ($cache/lock)" >&2; exit 1; }
rm -rf "$cache/.staging"
mkdir -p "$cache/.staging"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch" "$cache/.staging"' EXIT
declare -A entry_of=() key_of=()
if [ -n "$(for n in "${BLOCK_ORDER[@]}"; do results_md_marker "$n" || true; done)" ]; then ensure_results_md; fi

echo "results: ${#plan[@]} block(s): ${plan[*]}$([ "$force" = 1 ] && echo " (FORCE: the ones selected run again)")" >&2
for n in "${plan[@]}"; do
  block_key_text "$n" >"$scratch/key-$n"
  key_of[$n]=$(sha256sum <"$scratch/key-$n" | cut -c1-64)
  entry=$cache/$n/${key_of[$n]}
  if [ -f "$entry/outputs.sha256" ] && { [ "$force" = 0 ] || ! [[ -v selected[$n] ]]; }; then
    entry_of[$n]=$entry
    if [[ -v selected[$n] ]]; then
      if ! apply_splices "$entry"; then
        record "$n" FAILED 0; print_summary
        echo "results: block $n: its cached tables could not be spliced (above); the blocks before it are spliced" >&2
        exit 1
      fi
      echo "results: block $n: cached (ran in $(mmss "$(awk -F'\t' '$1 == "wall_s" { print $2 }' "$entry/meta.tsv")"))" >&2
      record "$n" cached 0
    else
      echo "results: block $n: cached (read by the blocks named, not spliced)" >&2
      record "$n" "cached, read" 0
    fi
    continue
  fi
  [[ -v selected[$n] ]] || echo "results: block $n: not cached, run for the blocks that read it" >&2
  echo "results: block $n: start ($(date +%H:%M:%S))" >&2
  set +e
  run_block "$n"
  rc=$?
  set -e
  if [ "$rc" != 0 ]; then
    record "$n" FAILED "$block_wall"
    print_summary
    echo "results: stopped at block $n (its log: $cache/logs/$n.log). The blocks before it are spliced and cached; run again to resume at $n." >&2
    exit 1
  fi
  if [ -n "$(results_md_marker "$n" || true)" ]; then rewrite_results_md_header; fi
  echo "results: block $n: done in $(mmss "$block_wall")" >&2
  record "$n" "done" "$block_wall"
done
print_summary
