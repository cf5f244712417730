#!/usr/bin/env bash
# docs/fleet.md's "Fault campaign" summary table from one run of the campaign
# (scripts/fleet_faults.sh: 3-member etcd with TLS + auth, 2 coordinators, N simulated agents,
# loopback only, about 3 min). Prints markdown on stdout; exit 1 if the campaign failed or its
# report is missing (the caller then leaves the doc as it was).
#   scripts/fleet_faults_table.sh [AGENTS]     (default 4; the binary from FLEXWATT or build/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
  -h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
agents=${1:-4}
[[ "$agents" =~ ^[1-9][0-9]{0,2}$ ]] ||
  { echo "fleet_faults_table.sh: AGENTS: '$agents' is not a count of 1-999 agents" >&2; exit 2; }
[ $# -le 1 ] || { echo "fleet_faults_table.sh: one argument at most (AGENTS), got $#" >&2; exit 2; }
out=$(mktemp -d /tmp/flexwatt-faults-table.XXXXXX)
trap 'rm -rf "$out"' EXIT
rc=0
bash "$here/fleet_faults.sh" --agents "$agents" --out "$out/run" >"$out/log" 2>&1 || rc=$?
[ -f "$out/run/report.json" ] || { tail -5 "$out/log" >&2; exit 1; }
echo "Written by \`make results-all\` (\`scripts/fleet_faults_table.sh $agents\`, simulated GPUs,"
echo "$(date -u +%Y-%m-%d), campaign exit status $rc); the table after it reads one such run in words."
echo
echo "| experiment | ok | recover_s | takeover_s | what the campaign recorded |"
echo "|---|---|---|---|---|"
jq -r '.experiments[] |
  "| \(.experiment) | \(if .ok then "yes" else "**no**" end) | \(.recover_s // "—") | \(.takeover_s // "—") | \(del(.experiment, .ok, .recover_s, .takeover_s) | if length == 0 then "—" else tojson | gsub("\\|"; "/") end) |"' \
  "$out/run/report.json"
echo
jq -r '"Site: \(.windows_30s) sliding 30 s windows, \(.windows_30s_over) over budget (worst \(.worst_30s_excess * 100000 | round / 1000) %); worst 0.5 s sample \(.worst_instant_excess * 1000 | round / 10) % over; agents not on `coordinator` at the end: \(.agents_not_on_coordinator_at_end | if length == 0 then "none" else tostring end); unauthenticated writes accepted: \(.unauthenticated_writes_accepted) of \(.unauthenticated_writes_tried); campaign \(.duration_s) s, \(if .ok then "ok" else "FAILED" end)."' \
  "$out/run/report.json"
exit "$rc"
