#!/usr/bin/python3
"""`flexwatt analyze` against the I/O floor, pandas, DuckDB and Polars, on one generated 10M-row 8-GPU trace.

Usage: bench/analyze_vs_pandas.py FLEXWATT_BIN ANALYZE_BENCH_BIN

The trace is the one bench/analyze_bench.cpp generates (8 GPUs at 0.1 s, all nine gpus.csv
columns, seeded), under $TMPDIR/flexwatt_bench/<rows>/ (FLEXWATT_BENCH_ROWS overrides the row
count). Timed, best of 3 each, the page cache warm:
  - two I/O floors, both reading every byte of the file into user space: `cat FILE > /dev/null`
    (read() into cat's buffer, the writes to /dev/null cost nothing) and `cat FILE | wc -c`
    (the same read, plus a copy through a pipe into wc);
  - flexwatt analyze (the whole verb: node and per-GPU summaries, windows, curve, JSON) as it
    runs by default (two parse threads for a file this large on >= 2 cores) and with one
    (--parse-threads 1); the JSON must be identical;
  - CPU time (user + system) beside each wall time, the least of the 3 runs: the machine's
    other load changes it less than the wall time;
  - pandas: read_csv (C engine) of time_s, gpu, power_w, the node sum per tick, and the node's
    tumbling windows with flexwatt's rules (zero-order hold on the regular 0.1 s grid, a window
    judged when covered for at least half its length, a violation when the mean exceeds the
    budget by more than 1e-9 relative).
  - DuckDB and Polars (their Node.js bindings in bench/node_modules, `make bench-deps`):
    bench/analyze_engines.mjs, the same three columns, node sum and window rules, each engine
    on all cores, best of 3 (wall) and least CPU time of 3 (the node process, all threads).
The node violation counts of all four are compared window length by window length, and the
ratios printed side by side (how many times faster analyze is than each). Then, when
built, parse_floor (beside ANALYZE_BENCH_BIN; bench/parse_floor.cpp) prints the floor under the
line parser on the same file: fields split only, and split plus number conversion.
"""
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

BUDGET_W = 4400.0
WINDOWS_S = [0.5, 10, 30, 300]
TOL = 1e-9


def cpu_s():
    """CPU seconds (user + system) of this process and of its finished children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def best_of(n, fn, cpu=None):
    """Best wall time of n runs of fn, and fn's last result; cpu (a list) gets the least CPU
    time of a run (the command's, or this process's for in-process work)."""
    best, least_cpu, out = math.inf, math.inf, None
    for _ in range(n):
        c0, t0 = cpu_s(), time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
        least_cpu = min(least_cpu, cpu_s() - c0)
    if cpu is not None:
        cpu.append(least_cpu)
    return best, out


def pandas_node(path):
    import numpy as np
    import pandas as pd
    df = pd.read_csv(path, usecols=["time_s", "gpu", "power_w"], engine="c")
    node = df.groupby("time_s", sort=True)["power_w"].sum()
    t = node.index.to_numpy()
    p = node.to_numpy()
    period = float(np.median(np.diff(t[:65])))
    counts = {}
    for w in WINDOWS_S:
        k = np.floor((t - t[0]) / w + TOL).astype(np.int64)
        g = pd.DataFrame({"k": k, "p": p}).groupby("k")["p"].agg(["mean", "count"])
        judged = g[g["count"] * period >= 0.5 * w * (1 - TOL)]
        counts[w] = (int(len(judged)), int((judged["mean"] > BUDGET_W * (1 + TOL)).sum()))
    return counts


def fmt_w(w):
    """A window length as JavaScript prints it (the engines' JSON keys): 10, 0.5."""
    return str(int(w)) if float(w).is_integer() else str(w)


def run_engines(csv):
    """DuckDB and Polars through bench/analyze_engines.mjs: [(name, report)], ok."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analyze_engines.mjs")
    mods = os.path.join(os.path.dirname(script), "node_modules")
    if not os.path.isdir(os.path.join(mods, "@duckdb", "node-api")) or \
            not os.path.isdir(os.path.join(mods, "nodejs-polars")):
        print(f"DuckDB/Polars: {mods} lacks @duckdb/node-api or nodejs-polars (make bench-deps)")
        return [], False
    r = subprocess.run(["node", script, csv, str(BUDGET_W), ",".join(fmt_w(w) for w in WINDOWS_S),
                        "3"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"DuckDB/Polars: node {script} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
        return [], False
    rep = json.loads(r.stdout)
    d, p = rep["duckdb"], rep["polars"]
    return [(f"DuckDB {d['version']} ({d['threads']} thr)", d),
            (f"Polars ({p['threads']} thr)", p)], True


def main():
    flexwatt, analyze_bench = sys.argv[1], sys.argv[2]
    rows = int(os.environ.get("FLEXWATT_BENCH_ROWS", "10000000"))
    subprocess.run([analyze_bench, "--benchmark_filter=^$"], check=True,
                   stdout=subprocess.DEVNULL)  # generates the trace when missing
    d = os.path.join(tempfile.gettempdir(), "flexwatt_bench", str(rows))
    csv = os.path.join(d, "gpus.csv")
    size_mb = os.path.getsize(csv) / 1e6

    def cat():
        subprocess.run(["cat", csv], check=True, stdout=subprocess.DEVNULL)

    def cat_wc():
        subprocess.run(f"cat '{csv}' | wc -c", shell=True, check=True, stdout=subprocess.DEVNULL)

    def analyze(threads="0"):
        env = dict(os.environ)
        env.pop("FLEXWATT_PARSE_THREADS", None)
        r = subprocess.run([flexwatt, "analyze", d, "--budget-w", str(BUDGET_W), "--windows",
                            ",".join(str(w) for w in WINDOWS_S), "--parse-threads", threads,
                            "--json"], check=True, capture_output=True, text=True, env=env)
        return json.loads(r.stdout)

    load = os.getloadavg()
    t_cat, _ = best_of(3, cat)
    t_catwc, _ = best_of(3, cat_wc)
    cpu = []
    t_fw, j = best_of(3, analyze, cpu)
    t_fw1, j1 = best_of(3, lambda: analyze("1"), cpu)
    t_pd, counts = best_of(3, lambda: pandas_node(csv), cpu)
    c_fw, c_fw1, c_pd = cpu
    print(f"trace: {csv} ({rows} rows, {size_mb:.0f} MB), budget {BUDGET_W} W on the node; "
          f"{os.cpu_count()} CPUs, load average before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"I/O floor, cat FILE > /dev/null: {t_cat:7.3f} s  {size_mb / t_cat:7.0f} MB/s")
    print(f"I/O floor, cat FILE | wc -c:     {t_catwc:7.3f} s  {size_mb / t_catwc:7.0f} MB/s")
    print(f"flexwatt analyze (default):      {t_fw:7.3f} s  {rows / t_fw / 1e6:7.2f} M rows/s"
          f"  CPU {c_fw:.3f} s")
    print(f"flexwatt analyze --parse-threads 1: {t_fw1:.3f} s, same JSON: {j1 == j}"
          f"  CPU {c_fw1:.3f} s")
    print(f"pandas:                          {t_pd:7.3f} s  {rows / t_pd / 1e6:7.2f} M rows/s"
          f"  CPU {c_pd:.3f} s")
    print(f"analyze vs pandas: {t_pd / t_fw:.2f}x faster (target >= 10); analyze / I/O floor: "
          f"{t_fw / t_cat:.2f} (cat > /dev/null), {t_fw / t_catwc:.2f} (cat | wc -c) "
          f"(target <= 2); load average after {os.getloadavg()[0]:.2f}")
    print(f"CPU time, pandas / analyze: {c_pd / c_fw:.2f} (two threads), {c_pd / c_fw1:.2f} (one)")
    same = True
    engines, engines_ok = run_engines(csv)
    rows_out = [("flexwatt analyze", t_fw, c_fw), ("pandas", t_pd, c_pd)]
    rows_out += [(name, e["wall_s"], e["cpu_s"]) for name, e in engines]
    print(f"{'':24} {'wall s':>8} {'M rows/s':>9} {'CPU s':>8}  {'analyze faster (wall)':>22}"
          f"  {'(CPU)':>7}")
    for name, wall, cpu_t in rows_out:
        print(f"{name:24} {wall:8.3f} {rows / wall / 1e6:9.2f} {cpu_t:8.3f}  {wall / t_fw:21.2f}x"
              f"  {cpu_t / c_fw:6.2f}x")
    for w, ws in zip(WINDOWS_S, j["node"]["windows"]):
        fw = (ws["windows"], ws["violations"])
        theirs = [("pandas", counts[w])]
        theirs += [(n.split(" ")[0], tuple(e["windows"][fmt_w(w)])) for n, e in engines]
        ok = all(c == fw for _, c in theirs)
        same &= ok
        print(f"  window {w:>5} s, violations/windows: analyze {fw[1]}/{fw[0]}, " +
              ", ".join(f"{n} {c[1]}/{c[0]}" for n, c in theirs) +
              f" {'same' if ok else 'DIFFERENT'}")
    floor_ok = True
    parse_floor = os.path.join(os.path.dirname(analyze_bench), "parse_floor")
    if os.path.exists(parse_floor):
        floor_ok = subprocess.run([parse_floor, csv]).returncode == 0
    return 0 if same and j1 == j and floor_ok and engines_ok else 1


if __name__ == "__main__":
    sys.exit(main())
