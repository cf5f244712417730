#!/usr/bin/env bash
# `flexwatt coordinator` rejects bad configurations with exit code 2 and a message naming the
# file, line and field (unsafe ones too: a non-loopback endpoint without tokens, a ramp that
# never ends; etcd TLS/auth files missing or readable by others, TLS keys on http endpoints);
# `flexwatt fleet-sim` rejects a missing endpoint list.
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
cfg "site: s1" "id: a" "etcd: [http://127.0.0.1:1]" "listen: 0.0.0.0:8740"
expect2 "non-loopback listen without tokens" "c.yaml:4: listen: .*needs token_file"
cfg "site: s1" "id: a" "etcd: [http://127.0.0.1:1]" "token_file: /nonexistent" "listen: 0.0.0.0:8740" "allow_unauthenticated_writes: true"
expect2 "unauthenticated writes off loopback" "c.yaml:6: allow_unauthenticated_writes: only on a loopback"
cfg "site: s1" "id: a" "etcd: [http://127.0.0.1:1]" "expiry_s: 9000"
expect2 "assignment lifetime beyond what agents take" "c.yaml:4: expiry_s"
cfg "site: s1" "id: a" "etcd: [http://127.0.0.1:1]" "grid_ramp_w_per_s: 1e-300"
expect2 "a ramp that never ends" "c.yaml:4: grid_ramp_w_per_s: .*0 \(a step\) or 1..1e12 W/s"
cfg "site: s1" "id: a" "etcd: [https://127.0.0.1:1]" "etcd_tls:" "  ca_file: $dir/nope.pem"
expect2 "unreadable etcd CA" "c.yaml:5: etcd_tls.ca_file: $dir/nope.pem: cannot read"
printf 'pw\n' >"$dir/pw"
chmod 644 "$dir/pw"
cfg "site: s1" "id: a" "etcd: [https://127.0.0.1:1]" "etcd_auth:" "  user: fw" "  password_file: $dir/pw"
expect2 "etcd password others can read" "c.yaml:6: etcd_auth.password_file: .*mode is 0644.*chmod 600"
cfg "site: s1" "id: a" "etcd: [http://127.0.0.1:1]" "etcd_tls:" "  ca_file: $dir/pw"
expect2 "etcd TLS keys on plain endpoints" "c.yaml:5: etcd_tls: needs https://"
expect_exit2 "fleet-sim without endpoints" "no endpoint" fleet-sim --etcd , --out "$dir/o"
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
