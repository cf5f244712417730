#!/usr/bin/python3
"""`flexwatt analyze` against the I/O floor and pandas, on one generated 10M-row 8-GPU trace.

Usage: bench/analyze_vs_pandas.py FLEXWATT_BIN ANALYZE_BENCH_BIN

The trace is the one bench/analyze_bench.cpp generates (8 GPUs at 0.1 s, all nine gpus.csv
columns, seeded), under $TMPDIR/flexwatt_bench/<rows>/ (FLEXWATT_BENCH_ROWS overrides the row
count). Timed, best of 3 each, the page cache warm:
  - the I/O floor: reading the bytes (cat FILE > /dev/null);
  - flexwatt analyze (the whole verb: node and per-GPU summaries, windows, curve, JSON), with
    one parse thread and with two (FLEXWATT_PARSE_THREADS=2; the JSON must be identical);
  - pandas: read_csv (C engine) of time_s, gpu, power_w, the node sum per tick, and the node's
    tumbling windows with flexwatt's rules (zero-order hold on the regular 0.1 s grid, a window
    judged when covered for at least half its length, a violation when the mean exceeds the
    budget by more than 1e-9 relative).
The node violation counts of both are compared window length by window length.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import time

BUDGET_W = 4400.0
WINDOWS_S = [0.5, 10, 30, 300]
TOL = 1e-9


def best_of(n, fn):
    best, out = math.inf, None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
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

    def analyze(threads="1"):
        env = dict(os.environ, FLEXWATT_PARSE_THREADS=threads)
        r = subprocess.run([flexwatt, "analyze", d, "--budget-w", str(BUDGET_W), "--windows",
                            ",".join(str(w) for w in WINDOWS_S), "--json"],
                           check=True, capture_output=True, text=True, env=env)
        return json.loads(r.stdout)

    t_cat, _ = best_of(3, cat)
    t_fw, j = best_of(3, analyze)
    t_fw2, j2 = best_of(3, lambda: analyze("2"))
    t_pd, counts = best_of(3, lambda: pandas_node(csv))
    print(f"trace: {csv} ({rows} rows, {size_mb:.0f} MB), budget {BUDGET_W} W on the node")
    print(f"I/O floor (cat):  {t_cat:7.3f} s  {size_mb / t_cat:7.0f} MB/s")
    print(f"flexwatt analyze: {t_fw:7.3f} s  {rows / t_fw / 1e6:7.2f} M rows/s")
    print(f"  (two parse threads, FLEXWATT_PARSE_THREADS=2: {t_fw2:.3f} s, "
          f"same JSON: {j2 == j})")
    print(f"pandas:           {t_pd:7.3f} s  {rows / t_pd / 1e6:7.2f} M rows/s")
    print(f"analyze vs pandas: {t_pd / t_fw:.2f}x faster (target >= 10); "
          f"analyze / I/O floor: {t_fw / t_cat:.2f} (target <= 2)")
    same = True
    for w, ws in zip(WINDOWS_S, j["node"]["windows"]):
        fw_n, fw_v = ws["windows"], ws["violations"]
        pd_n, pd_v = counts[w]
        ok = (fw_n, fw_v) == (pd_n, pd_v)
        same &= ok
        print(f"  window {w:>5} s: flexwatt {fw_v}/{fw_n} violations, pandas {pd_v}/{pd_n} "
              f"{'same' if ok else 'DIFFERENT'}")
    return 0 if same and j2 == j else 1


if __name__ == "__main__":
    sys.exit(main())
