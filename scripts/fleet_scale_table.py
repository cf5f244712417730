#!/usr/bin/env python3
"""docs/fleet.md's "Scale on paper: 10,000 nodes" tables, from one fleet-sim run and one
fleet_split_bench run: the per-node rates measured, then the same protocol's load at 500, 1,000
and 10,000 nodes by the formulas below. Part of `make results-all` (scripts/results.sh splices
the output between the fleet-scale markers; the fleet-sim report is the run of the
fleet-sim-site block).

Usage: scripts/fleet_scale_table.py REPORT_JSON BENCH_JSON
  REPORT_JSON  report.json of `flexwatt fleet-sim --scenario site` (scripts/fleet_sim.sh --out DIR)
  BENCH_JSON   `build/bench/fleet_split_bench --benchmark_format=json` (BM_Split, BM_DecodeNodes;
               their CPU times)
Exit 2 on bad arguments or an input without a field the tables need (naming file and field),
1 when an input file is missing.

The estimate (every input either measured in the two runs or a constant below, with its source):
  per node      rate r = (the run's writes/s) / (its starting nodes)
  registrations reg(n) = r_reg * n            keep-alives ka(n) = n / (NODE_LEASE_TTL_S / 3)
  assignments   keys(n) = r_keys * n, in at least keys(n) / TXN_MAX_OPS fenced txns/s
  one round     range(n) + decode(n) + split(n) + txns(n):
                range(n) = RANGE_64_MS * n / 64 (bytes read grow with n);
                decode(n) = n * the bench's decode time per record;
                split(n) = the bench's greedy split of 10,000 nodes * n / 10,000 (the slowest allocator);
                txns(n) = ceil(n / 64) * TXN_64_MS (the measured txn of 64 puts per 64 nodes)
  grid ramp     rounds per 30 s ramp = min(RAMP_ROUNDS_64, 30 s / round(n)); the look-ahead a
                round needs, as a share of the ramp's depth = round(n) / 30 s
  watch         events/s at the coordinator = reg(n); their decode CPU = reg(n) * decode
  etcd load     (reg + ka) / PUT_RATE (the single-client put rate)
"""
import json
import math
import os
import sys

# Constants of the estimate, with their sources.
NODE_LEASE_TTL_S = 5.0  # fleet-sim's node lease (docs/fleet.md "Measured: fleet run")
TXN_MAX_OPS = 128  # etcd's default --max-txn-ops
RAMP_S = 30.0  # the site scenario's ramps (5 % of D at D = 600 s; docs/fleet.md)
RAMP_ROUNDS_64 = 60  # the coordinator re-splits per 0.5 % of the budget on a ramp (docs/fleet.md "Coordinator")
# Per-call etcd costs: a record of an ad-hoc loop over EtcdClient (docs/fleet.md "Client
# behaviour": one local etcd 3.4.23 member, fsync on, one TCP connection per call; not in the tree).
PUT_MS = 1.4
RANGE_64_MS = 1.8
TXN_64_MS = 7.7
SIZES = [500, 1000, 10000]


def die(code, msg):
    print(f"fleet_scale_table.py: {msg}", file=sys.stderr)
    sys.exit(code)


def load(path):
    if not os.path.exists(path):
        die(1, f"{path}: no such file")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        die(2, f"{path}: not JSON ({e})")


def field(obj, path, keys):
    cur = obj
    for k in keys:
        if not isinstance(cur, dict) or k not in cur or cur[k] is None:
            die(2, f"{path}: field {'.'.join(keys)} missing")
        cur = cur[k]
    if not isinstance(cur, (int, float)):
        die(2, f"{path}: field {'.'.join(keys)} is not a number")
    return float(cur)


def bench_ms(bench, path, name):
    """cpu_time of the benchmark NAME (its median when repeated) in milliseconds: the
    coordinator's CPU cost, steadier than the wall time on a loaded machine."""
    rows = [b for b in bench.get("benchmarks", []) if b.get("run_name", b.get("name")) == name
            and b.get("aggregate_name", "median") == "median"] if isinstance(bench, dict) else []
    if not rows:
        die(2, f"{path}: no benchmark {name}")
    b = rows[0]
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}.get(b.get("time_unit", "ns"))
    if scale is None or not isinstance(b.get("cpu_time"), (int, float)):
        die(2, f"{path}: {name}: cpu_time or time_unit unreadable")
    return b["cpu_time"] * scale


def g(x, digits=2):
    """x with `digits` significant digits, thousands separated (5700, 0.57, 8,600)."""
    if x == 0:
        return "0"
    p = digits - 1 - math.floor(math.log10(abs(x)))
    v = round(x, p)
    return f"{v:,.{max(p, 0)}f}"


def main(argv):
    if len(argv) == 1 and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) != 2:
        die(2, "usage: scripts/fleet_scale_table.py REPORT_JSON BENCH_JSON")
    rpath, bpath = argv
    rep, bench = load(rpath), load(bpath)
    nodes = field(rep, rpath, ["nodes"])
    if nodes <= 0:
        die(2, f"{rpath}: field nodes is not positive")
    reg_s = field(rep, rpath, ["etcd_writes_per_s", "node_registrations"])
    keys_s = field(rep, rpath, ["etcd_writes_per_s", "assignment_keys"])
    txns_s = field(rep, rpath, ["etcd_writes_per_s", "coordinator_txns"])
    p50 = field(rep, rpath, ["realloc_latency_s", "p50"]) * 1e3
    p99 = field(rep, rpath, ["realloc_latency_s", "p99"]) * 1e3
    resplits = field(rep, rpath, ["realloc_latency_s", "count"])
    duration = field(rep, rpath, ["duration_s"])
    split = {a: {n: bench_ms(bench, bpath, f"BM_Split/{i}/{n}") for n in (1000, 10000)}
             for i, a in enumerate(["equal", "proportional", "pfi", "greedy"])}
    decode_us = bench_ms(bench, bpath, "BM_DecodeNodes/10000") * 1e3 / 10000
    r_reg, r_keys = reg_s / nodes, keys_s / nodes
    ka = 1 / (NODE_LEASE_TTL_S / 3)

    def round_ms(n):
        return (RANGE_64_MS * n / 64 + n * decode_us / 1e3 + split["greedy"][10000] * n / 10000
                + math.ceil(n / 64) * TXN_64_MS)

    n0 = int(nodes)
    ctx = bench.get("context", {}) if isinstance(bench, dict) else {}
    la = ctx.get("load_avg")
    load_avg = f"{la[0]:.2f}" if isinstance(la, list) and la and isinstance(la[0], (int, float)) else "not recorded"
    print(f"Measured: one `fleet-sim --scenario site` run ({n0} nodes, {duration:g} s, "
          f"{resplits:g} re-splits; rates per starting node) and one `fleet_split_bench` run "
          f"({ctx.get('num_cpus', '?')} CPUs, load average {load_avg}; its CPU times); "
          f"constants: node lease {NODE_LEASE_TTL_S:g} s, etcd's {TXN_MAX_OPS} ops per txn, and the per-call "
          f"etcd costs of \"Client behaviour\" (put {PUT_MS} ms, range of 64 keys {RANGE_64_MS} ms, fenced txn "
          f"of 64 puts {TXN_64_MS} ms: a record, not rerun).")
    print()
    print("| per node | measured | source |")
    print("|---|---|---|")
    print(f"| registration puts | {g(r_reg)}/s ({g(reg_s, 3)}/s for {n0}) | report.json `etcd_writes_per_s.node_registrations` |")
    print(f"| lease keep-alives | {g(ka)}/s | TTL/3 of the {NODE_LEASE_TTL_S:g} s node lease |")
    print(f"| assignment keys | {g(r_keys)}/s ({g(keys_s, 3)}/s for {n0}, in {g(txns_s, 3)} fenced txns/s) | "
          "report.json `etcd_writes_per_s.assignment_keys`, `coordinator_txns` |")
    print(f"| coordinator CPU per round | decoding a record {g(decode_us)} µs ({g(1e3 / decode_us * 1e3, 3)} records/s); "
          f"split of 10,000 nodes {' / '.join(g(split[a][10000]) for a in split)} ms, of 1,000 "
          f"{' / '.join(g(split[a][1000]) for a in split)} ms (equal / proportional / pfi / greedy) | "
          "`fleet_split_bench`: `BM_DecodeNodes`, `BM_Split` |")
    print(f"| round latency (change → written) | p50 {g(p50)} ms, p99 {g(p99)} ms at {n0} nodes | "
          "report.json `realloc_latency_s` |")
    print()
    print(f"| | {n0} nodes (measured) | " + " | ".join(f"{n:,} nodes (estimate)" for n in SIZES) + " |")
    print("|---|---|" + "---|" * len(SIZES))

    def row(label, measured, fn):
        print(f"| {label} | {measured} | " + " | ".join(fn(n) for n in SIZES) + " |")

    row("registration puts", f"{g(reg_s, 3)}/s", lambda n: f"{g(r_reg * n)}/s")
    row("lease keep-alives", f"{g(ka * nodes, 2)}/s", lambda n: f"{g(ka * n)}/s")
    row("puts + keep-alives vs one client's put rate", f"{g((reg_s + ka * nodes) * PUT_MS / 1e3)}×",
        lambda n: f"{g((r_reg + ka) * n * PUT_MS / 1e3)}×")
    row("assignment keys", f"{g(keys_s, 3)}/s", lambda n: f"{g(r_keys * n)}/s in ≥ {g(r_keys * n / TXN_MAX_OPS)} txns/s")
    row("one round: range + decode + split + txns", f"p50 {g(p50)} ms (estimate {g(round_ms(nodes))} ms)",
        lambda n: f"{g(RANGE_64_MS * n / 64)} + {g(n * decode_us / 1e3)} + {g(split['greedy'][10000] * n / 10000)} + "
        f"{g(math.ceil(n / 64) * TXN_64_MS)} ≈ **{g(round_ms(n))} ms**")
    row(f"rounds per {RAMP_S:g} s grid ramp; look-ahead needed", f"~{RAMP_ROUNDS_64}; ~{g(p50 / 1e3 / RAMP_S * 100)} %",
        lambda n: f"{g(min(RAMP_ROUNDS_64, RAMP_S / (round_ms(n) / 1e3)))}; {g(round_ms(n) / 1e3 / RAMP_S * 100)} % of its depth")
    row("coordinator watch: events/s, their decode CPU", f"{g(reg_s, 3)}/s, {g(reg_s * decode_us / 1e3)} ms/s",
        lambda n: f"{g(r_reg * n)}/s, {g(r_reg * n * decode_us / 1e3)} ms/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
