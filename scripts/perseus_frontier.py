#!/usr/bin/env python3
"""Perseus's energy saving on its own iteration time-energy frontier, at +0 % and at +SLOW.

Usage: scripts/perseus_frontier.py SOSP24_DATA [SLOW]   (SLOW default 0.012)
  SOSP24_DATA: the Perseus artifact's `sosp24_data/` folder (repository ml-energy/zeus, branch
  `kronos`, Apache-2.0); reads emulation/iteration_time_energy/<gpu>/<model>_bf16_mb<N>.csv and
  emulation/stage_profile/<model>+<gpu>_bf16.csv. Writes CSV to stdout (data/perseus/frontier_savings.csv).

Set-up as in the artifact's evaluation notebook ("Large-Scale Emulation"): 8 stages x TP 8,
global batch 1536 (pipelines = 1536 / micro-batches); frontier times x 10, energies x 10 x TP;
baseline = every stage at its maximum clock at the frontier's shortest time T0, with blocking
power (A100 83.64 W, A40 70.38 W per GPU) for the time a stage waits.
  saving_0_pct: the frontier's shortest-time point against the baseline (the notebook's figure).
  saving_plus_pct: the frontier at T1 = T0 (1 + SLOW), linearly interpolated between the two
    frontier points around T1 (after keeping only Pareto points, least energy so far as time
    grows), against the same baseline at T0 -- the definition of `pipeline plan`'s energy_saved.
  With a straggler (factor F = 1.2, 96 micro-batches): the straggler runs the intrinsic point
  (time x F, energy x F); the other pipelines take the frontier point t <= F T that minimises
  E(t) + blocking (F T - t), T = T0 (saving_0, the notebook picks the least E(t); both are
  printed to stderr) or T1; baseline F E0 + (n-1) (E0 + blocking (F T0 - T0)).
"""
import csv
import sys

TP, PP, GLOBAL_BATCH = 8, 8, 1536
BLOCK_W = {"a100_sxm": 83.64, "a40": 70.38}
F_MAX = {"a100_sxm": 1410, "a40": 1740}


def frontier(path):
    with open(path) as f:
        pts = sorted((10 * float(r["time"]), 10 * TP * float(r["energy"])) for r in csv.DictReader(f))
    pareto = []
    for t, e in pts:
        if not pareto or e < pareto[-1][1]:
            pareto.append((t, e))
    return pts, pareto


def interp(pareto, t):
    if t <= pareto[0][0]:
        return pareto[0][1]
    for (t0, e0), (t1, e1) in zip(pareto, pareto[1:]):
        if t <= t1:
            return e0 + (e1 - e0) * (t - t0) / (t1 - t0)
    return pareto[-1][1]  # past the least-energy point: stay there and block


def baseline_energy(profile, gpu, mb, T):
    rows = [r for r in csv.DictReader(open(profile)) if int(r["frequency"]) == F_MAX[gpu]]
    e = 0.0
    for s in range(PP):
        op = {r["instruction"]: r for r in rows if int(r["stage"]) == s}
        fe = 10 * TP * (float(op["forward"]["energy"]) + float(op["backward"]["energy"]))
        ft = 10 * (float(op["forward"]["time"]) + float(op["backward"]["time"]))
        e += fe * mb + BLOCK_W[gpu] * TP * (T - ft * mb)
    return e


def others(pts, pareto, gpu, target, notebook):
    """Least energy of a non-straggler pipeline over an iteration of length target."""
    blk = BLOCK_W[gpu] * TP * PP
    cand = [(t, e) for t, e in pts if t <= target]
    if notebook:
        t, e = min(cand, key=lambda p: p[1])
        return e + blk * (target - t)
    best = min(e + blk * (target - t) for t, e in cand)
    return min(best, interp(pareto, target))  # target inside the frontier: no blocking added


def main():
    root = sys.argv[1].rstrip("/") + "/emulation"
    slow = float(sys.argv[2]) if len(sys.argv) > 2 else 0.012
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["model", "gpu", "microbatches", "straggler", "t0_s", "t_plus_s", "saving_0_pct",
                "saving_plus_pct"])
    for model in ["gpt3-175b", "bloom"]:
        for gpu in ["a100_sxm", "a40"]:
            prof = f"{root}/stage_profile/{model}+{gpu}_bf16.csv"
            for mb, F in [(12, 1.0), (24, 1.0), (48, 1.0), (96, 1.0), (96, 1.2)]:
                pts, pareto = frontier(f"{root}/iteration_time_energy/{gpu}/{model}_bf16_mb{mb}.csv")
                n = GLOBAL_BATCH // mb
                T0 = pareto[0][0]
                T1 = T0 * (1 + slow)
                E0 = baseline_energy(prof, gpu, mb, T0)
                Ep0, Ep1 = pareto[0][1], interp(pareto, T1)
                if F == 1.0:
                    s0, s1 = 1 - Ep0 / E0, 1 - Ep1 / E0
                else:
                    base = F * E0 + (n - 1) * (E0 + BLOCK_W[gpu] * TP * PP * (F * T0 - T0))
                    nb = 1 - (F * Ep0 + (n - 1) * others(pts, pareto, gpu, F * T0, True)) / base
                    s0 = 1 - (F * Ep0 + (n - 1) * others(pts, pareto, gpu, F * T0, False)) / base
                    s1 = 1 - (F * Ep1 + (n - 1) * others(pts, pareto, gpu, F * T1, False)) / base
                    print(f"{model} {gpu} F={F}: notebook pick {100 * nb:.2f} %, "
                          f"least E + blocking {100 * s0:.2f} %", file=sys.stderr)
                w.writerow([model, gpu, mb, F, f"{T0:.3f}", f"{T1:.3f}", f"{100 * s0:.2f}",
                            f"{100 * s1:.2f}"])


if __name__ == "__main__":
    main()
