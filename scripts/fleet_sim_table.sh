#!/usr/bin/env bash
# docs/fleet.md's "Measured: fleet run" block, from one run: starts scripts/fleet_sim.sh (a
# 3-member etcd on loopback, `flexwatt fleet-sim --scenario site`, 64 nodes x 8 simulated A100,
# `equal`, 300 s of wall-clock time by default) and writes the block (the command, the run's
# setting and the table, every figure read from its report.json) to stdout. Part of
# `make results-all` (scripts/results.sh splices it between the fleet-sim-site markers).
# The latencies, takeover time and late ticks are wall-clock: they move with the machine's load,
# which the block states (load average before and after).
#   scripts/fleet_sim_table.sh [--nodes N] [--duration-s S] [--keep DIR] FLEXWATT_BIN
# Exit 2 on bad arguments, 1 when the run fails (etcd missing, a member not up, fleet-sim failed).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
nodes=64 duration=300 keep=""
while [ $# -gt 1 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --duration-s) duration=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    *) echo "fleet_sim_table.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ $# = 1 ] || { echo "usage: scripts/fleet_sim_table.sh [--nodes N] [--duration-s S] [--keep DIR] FLEXWATT_BIN" >&2; exit 2; }
bin=$1
[ -x "$bin" ] || { echo "fleet_sim_table.sh: $bin is not an executable" >&2; exit 2; }
case "$nodes$duration" in *[!0-9]*) echo "fleet_sim_table.sh: --nodes and --duration-s take whole numbers" >&2; exit 2 ;; esac
command -v jq >/dev/null || { echo "fleet_sim_table.sh: jq not installed" >&2; exit 1; }
if [ -n "$keep" ]; then out=$keep; mkdir -p "$out"; else
  out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
fi
args="--nodes $nodes --duration-s $duration --allocator equal"
load_before=$(cut -d' ' -f1 /proc/loadavg)
# shellcheck disable=SC2086
FLEXWATT=$bin nice -n 5 bash "$here/scripts/fleet_sim.sh" $args --out "$out" >"$out/run.log" 2>&1 ||
  { echo "fleet_sim_table.sh: the fleet-sim run failed:" >&2; grep -v " Killed " "$out/run.log" | tail -5 >&2; exit 1; }
load_after=$(cut -d' ' -f1 /proc/loadavg)
etcd_version=$("${FLEXWATT_ETCD:-/usr/bin/etcd}" --version 2>/dev/null | sed -n 's/^etcd Version: //p')
echo '```'
echo "nice -n 5 scripts/fleet_sim.sh $args --out DIR"
echo '```'
echo
jq -r --arg lb "$load_before" --arg la "$load_after" --arg etcd "${etcd_version:-?}" '
  def ms(x): "\(x * 1000 | round)";
  def pct(x): "\(x * 1000 | round / 10)";
  def sgn(x): (if x >= 0 then "+" else "−" end) + "\(x | if . < 0 then -. else . end | . * 10 | round / 10)";
  "Simulated nodes (\(.nodes) × \(.gpus_per_node) GPUs of `\(.node_scenario)`; \(.nodes + .extra_nodes_joining) nodes and \((.nodes + .extra_nodes_joining) * .gpus_per_node) GPUs with the late joiners), `\(.allocator)`, \(.duration_s) s of wall-clock time; site budget \(.site_budget_w / 100 | round / 10) kW (the `site` scenario: docs/fleet.md above); etcd \($etcd) × 3 on loopback with `--unsafe-no-fsync`; load average \($lb) before, \($la) after (the latencies, the takeover and the late ticks are wall-clock and move with it).",
  "",
  "| measure (`report.json`) | `\(.allocator)` |",
  "|---|---|",
  "| tumbling 30 s windows within budget | \(.windows_30s_within_budget)/\(.windows_30s) (\(pct(.windows_30s_within_fraction)) %) |",
  "| sliding 30 s windows within (one per tick) | \(pct(.sliding_windows_30s_within_fraction)) % (worst excess +\(.sliding_worst_excess_fraction * 100000 | round / 1000) %) |",
  "| reallocation latency p50 / p99 (re-splits) | \(ms(.realloc_latency_s.p50)) / \(ms(.realloc_latency_s.p99)) ms (\(.realloc_latency_s.count)) |",
  "| join latency p50 / p99 | \(ms(.join_latency_s.p50)) / \(ms(.join_latency_s.p99)) ms |",
  "| leader killed at 60 % → other leading | \(.coordinator_takeover_s * 100 | round / 100) s |",
  "| etcd writes/s: assignment keys (fenced txns) / registrations | \(.etcd_writes_per_s.assignment_keys * 10 | round / 10) (\(.etcd_writes_per_s.coordinator_txns * 100 | round / 100)) / \(.etcd_writes_per_s.node_registrations * 10 | round / 10) |",
  "| site power first ≤ grid target, vs its start | \(if .grid_target_reached_by_site_s == null then "never reached" else "\(sgn(.grid_target_reached_by_site_s)) s" end) |",
  "| mean job throughput vs its uncapped twin (site at 75 % of uncapped, −10 %, then −30 % of that) | \(.throughput_retained_mean * 1000 | round / 1000) |",
  "| late ticks / ticks; node leases re-granted; elections won; ticks on safe share | \(.late_ticks)/\(.ticks); \(.node_leases_regranted); \(.elections_won); \(.ticks_with_nodes_on_safe_share) |"
' "$out/report.json"
