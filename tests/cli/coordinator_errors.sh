#!/usr/bin/env bash
# `flexwatt coordinator` rejects bad configurations with exit code 2 and a message naming the
# file, line and field; `flexwatt fleet-sim` rejects a missing endpoint list.
# Usage: bash coordinator_errors.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
source "$(dirname "$0")/lib/common.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cfg() { printf '%s\n' "$@" >"$dir/c.yaml"; }
expect2() { expect_exit2 "$1" "$2" coordinator --config "$dir/c.yaml"; }
cfg "site: s1" "id: a"
expect2 "missing etcd" "etcd: missing"
cfg "site: s1" "id: a" "etcd: [http://127.0.0.1:1]" "allocator: pfii"
expect2 "unknown allocator" "c.yaml:4: allocator: .*choose equal or proportional"
cfg "site: s1" "id: a" "etcd: [http://127.0.0.1:1]" "refresh_s: 9"
expect2 "refresh above expiry/2" "c.yaml:4: refresh_s: must be <= expiry_s / 2"
cfg "site: 's 1'" "id: a" "etcd: [http://127.0.0.1:1]"
expect2 "bad site name" "c.yaml:1: site: .*only \[A-Za-z0-9._-\]"
cfg "site: s1" "id: a" "etcd: [http://127.0.0.1:1]" "budgt_w: 3"
expect2 "unknown key" "budgt_w"
expect_exit2 "fleet-sim without endpoints" "no endpoint" fleet-sim --etcd , --out "$dir/o"
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
