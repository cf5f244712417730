#!/usr/bin/env bash
# Test certificates for etcd over TLS (tests/fleet/etcd_secure_live_test.cpp and
# scripts/fleet_faults.py): in DIR, a CA (ca.pem/ca.key) and another one (other-ca), a server
# certificate of ca for 127.0.0.1 (server.pem/server.key), a client certificate of ca
# (client.pem/client.key) and one of other-ca (rogue.pem/rogue.key). Client certificates carry
# no common name: etcd 3.4's gateway refuses one with a CN while auth is on. Valid one day;
# loopback only. Needs openssl. Usage: scripts/etcd_test_pki.sh DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
cd "$1"
key="openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
printf 'subjectAltName=IP:127.0.0.1\n' > server.ext
printf 'extendedKeyUsage=clientAuth\n' > client.ext
for ca in ca other-ca; do
  $key -x509 -days 1 -subj "/CN=$ca" -keyout "$ca.key" -out "$ca.pem"
done
$key -subj /CN=etcd -keyout server.key -out server.csr
openssl x509 -req -days 1 -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
  -extfile server.ext -out server.pem
for c in client:ca rogue:other-ca; do
  n=${c%%:*}
  ca=${c##*:}
  $key -subj /O=flexwatt -keyout "$n.key" -out "$n.csr"
  openssl x509 -req -days 1 -in "$n.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial \
    -extfile client.ext -out "$n.pem"
done
