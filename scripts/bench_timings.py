#!/usr/bin/env python3
"""The benchmark timings of docs/control.md, docs/flexibility.md, docs/caps.md and
docs/agent-api.md as tables, from one run of each bench (scripts/results.sh runs them and
splices each table between its results:bench-KIND markers). Wall-clock figures move with the
machine's load: every table says the load average its bench saw.

Usage: scripts/bench_timings.py KIND JSON
  mpc         build/bench/mpc_bench --benchmark_format=json (BM_MpcDecision, BM_MpcRefit, BM_MpcReplan)
  allocation  build/bench/allocation_bench --benchmark_format=json (BM_Allocate, every method x 2 curve kinds)
  capnet      build/bench/capnet_bench --benchmark_format=json (BM_CapNetDecide64, BM_CapNetOnlineDecide64)
  agent       {"load_avg": L, "clients": agent_bench --json, "slowloris": agent_bench --slowloris N --json}
  lookahead   {"load_avg": L, "runs": [{"spec", "wall_s", "cpu_s", "eval": eval --json-out}]}
Exit 2 on bad arguments or a JSON without what the table needs (naming the file and what),
1 when the JSON file is missing.
"""
import json
import os
import sys


def die(code, msg):
    print(f"bench_timings.py: {msg}", file=sys.stderr)
    sys.exit(code)


def need(obj, path, *keys):
    cur = obj
    for k in keys:
        try:
            cur = cur[k]
        except (KeyError, IndexError, TypeError):
            die(2, f"{path}: {'.'.join(str(k) for k in keys)} missing")
    return cur


UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def bench_rows(d, path):
    rows = {}
    for b in need(d, path, "benchmarks"):
        if b.get("aggregate_name", "median") != "median" or b.get("error_occurred"):
            continue
        name = b.get("run_name", b.get("name", "")).split("/iterations:")[0].split("/real_time")[0]
        s = UNIT.get(b.get("time_unit", "ns"))
        if s is None or not isinstance(b.get("real_time"), (int, float)):
            die(2, f"{path}: {name}: real_time or time_unit unreadable")
        rows[name] = (b["real_time"] * s, b.get("cpu_time", 0) * s, b.get("label", ""))
    return rows


def get(rows, path, name):
    if name not in rows:
        die(2, f"{path}: no benchmark {name}")
    return rows[name]


def t(x):
    """A duration with a unit that keeps 3 significant digits."""
    for unit, s in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if x >= s or unit == "ns":
            v = x / s
            return f"{v:.3g} {unit}" if v < 1000 else f"{v:.0f} {unit}"
    return str(x)


def load_line(d, path):
    la = d.get("context", {}).get("load_avg") if "context" in d else d.get("load_avg")
    if isinstance(la, list):
        la = la[0] if la else None
    cpus = d.get("context", {}).get("num_cpus")
    return (f"load average {la:.2f}" if isinstance(la, (int, float)) else "load average not recorded") + \
        (f", {cpus} CPUs" if cpus else "")


def mpc(d, path):
    r = bench_rows(d, path)
    dec, refit, replan = get(r, path, "BM_MpcDecision"), get(r, path, "BM_MpcRefit"), get(r, path, "BM_MpcReplan")
    print(f"One `build/bench/mpc_bench` run ({load_line(d, path)}):")
    print()
    print("| mpc | wall | CPU |")
    print("|---|---|---|")
    print(f"| a decision between replans (the twin's observe and the shield) | {t(dec[0])} | {t(dec[1])} |")
    print(f"| the refit | {t(refit[0])} | {t(refit[1])} |")
    print(f"| a whole replan (refit and search) | {t(replan[0])} | {t(replan[1])} |")
    print(f"| a replan amortised over the 1200 decisions of a replan period (600 s of 0.5 s ticks), per tick | "
          f"{t(replan[0] / 1200 + dec[0])} | {t(replan[1] / 1200 + dec[1])} |")


def allocation(d, path):
    r = bench_rows(d, path)
    rows = [(k, v) for k, v in r.items() if k.startswith("BM_Allocate/")]
    if len(rows) == 0:
        die(2, f"{path}: no benchmark BM_Allocate")
    print(f"One `build/bench/allocation_bench` run ({load_line(d, path)}; 100 jobs of 11 points, a 30 % cut):")
    print()
    print("| method | concave curves, wall | non-concave curves, wall | CPU (concave / non-concave) | "
          "target on CPU (heuristics ≤ 1 ms, optimal ≤ 100 ms) |")
    print("|---|---|---|---|---|")
    by = {}
    for k, (w, c, label) in rows:
        method = label.split(" ")[0] if label else k
        kind = "non" if "non-concave" in label else "con"
        by.setdefault(method, {})[kind] = (w, c)
    for m, v in by.items():
        con, non = v.get("con"), v.get("non")
        limit = 0.1 if m == "optimal" else 1e-3
        worst = max(x[1] for x in (con, non) if x)
        print(f"| {m} | {t(con[0]) if con else '-'} | {t(non[0]) if non else '-'} | "
              f"{t(con[1]) if con else '-'} / {t(non[1]) if non else '-'} | "
              f"{'met' if worst <= limit else '**missed**'} |")


def capnet(d, path):
    r = bench_rows(d, path)
    mlp, online = get(r, path, "BM_CapNetDecide64"), get(r, path, "BM_CapNetOnlineDecide64")
    print(f"One `build/bench/capnet_bench` run ({load_line(d, path)}; wall time includes waiting for a core "
          "on a loaded machine, CPU time does not):")
    print()
    print("| one decision for 64 GPUs | wall | CPU | target ≤ 50 µs (CPU) |")
    print("|---|---|---|---|")
    for label, (w, c, _) in (("capnet (`BM_CapNetDecide64`: features over 20 samples × 64 GPUs, 64 MLP passes, "
                              "the command)", mlp),
                             ("capnet online (`BM_CapNetOnlineDecide64`, 64 GPUs of `caps-pp8-a100x64`)", online)):
        print(f"| {label} | {t(w)} | {t(c)} | {'met' if c <= 50e-6 else '**missed**'} |")


def agent(d, path):
    sl = need(d, path, "slowloris")
    eps = need(d, path, "clients", "endpoints")
    print(f"One run of the current agent (`build/bench/agent_bench --clients {need(d, path, 'clients', 'clients')} "
          f"--seconds {need(d, path, 'clients', 'seconds'):g}` and `--slowloris "
          f"{need(d, path, 'slowloris', 'idle_connections')} --seconds {need(d, path, 'slowloris', 'seconds'):g}`; "
          f"{load_line(d, path)}):")
    print()
    print("| endpoint (keep-alive clients) | req/s | p50 ms | p99 ms | max ms | errors |")
    print("|---|---|---|---|---|---|")
    for e in eps:
        print(f"| {need(e, path, 'endpoint')} | {need(e, path, 'requests_per_s'):,.0f} | {e.get('p50_ms', 0):.3f} | "
              f"{e.get('p99_ms', 0):.3f} | {e.get('max_ms', 0):.3f} | {e.get('errors', 0)} |")
    print()
    print("| slowloris: idle + trickling connections | probes | answered 200 | failed (2 s timeout) | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {sl['idle_connections']} + {need(d, path, 'slowloris', 'trickling_connections')} | "
          f"{need(d, path, 'slowloris', 'probes')} | {need(d, path, 'slowloris', 'probes_ok')} | "
          f"{need(d, path, 'slowloris', 'probes_failed')} | {sl.get('probe_p50_ms', 0):.1f} | "
          f"{sl.get('probe_p99_ms', 0):.1f} | {sl.get('probe_max_ms', 0):.1f} |")


def lookahead(d, path):
    runs = need(d, path, "runs")
    if not runs:
        die(2, f"{path}: runs is empty")
    print(f"One run each, 5 seeds × 1800 s of the simulated 7B job ({load_line(d, path)}):")
    print()
    print("| `flexwatt eval scenarios/grpo-7b-a100.yaml --seeds 5 --threads 1 --controllers SPEC` | wall | CPU | "
          "step tokens | viol (offset mean) |")
    print("|---|---|---|---|---|")
    for r in runs:
        tok = need(r, path, "eval", "controllers", 0, "progress", "completed_step_tokens", "mean")
        viol = need(r, path, "eval", "controllers", 0, "violation_rate_offsets", "rate", "mean")
        print(f"| `{need(r, path, 'spec')}` | {need(r, path, 'wall_s'):.1f} s | {need(r, path, 'cpu_s'):.1f} s | "
              f"{tok:,.0f} | {viol * 100:.2f} % |")


KINDS = {"mpc": mpc, "allocation": allocation, "capnet": capnet, "agent": agent, "lookahead": lookahead}


def main(argv):
    if len(argv) == 1 and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) != 2 or argv[0] not in KINDS:
        die(2, f"usage: scripts/bench_timings.py {{{'|'.join(KINDS)}}} JSON")
    kind, path = argv
    if not os.path.exists(path):
        die(1, f"{path}: no such file")
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        die(2, f"{path}: not JSON ({e})")
    if not isinstance(d, dict):
        die(2, f"{path}: not a JSON object")
    KINDS[kind](d, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
