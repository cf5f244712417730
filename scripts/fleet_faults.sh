#!/usr/bin/env bash
# The fleet's fault campaign on one machine (loopback only, bounded by --max-s, stops every
# process it started by PID): scripts/fleet_faults.py --help. `make fleet-faults` runs it.
#   scripts/fleet_faults.sh --agents 4 --out /tmp/flexwatt-faults
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/fleet_faults.py" "$@"
