#!/usr/bin/env python3
"""Per-stage forward/backward time of one micro-batch, from the Perseus artifact's per-rank op
timings at its fastest plan (every rank at the maximum SM clock): data/perseus/stage_work.csv.

Usage: scripts/extract_perseus_stage_work.py PERSEUS_DIR [OUT_CSV]
  PERSEUS_DIR  the artifact's `sosp24_data/perseus` folder (repository ml-energy/zeus, branch
               `kronos`), holding {A100,A40}/<dp+pp+tp>/<run>/N.{prof,sched}.json; e.g. from a
               bare clone: git --git-dir=zeus.git archive kronos sosp24_data/perseus | tar -x
  OUT_CSV      default: stdout

Per run folder (one model, partition and parallel layout): the plan N is the lowest-numbered
N.sched.json whose every rank runs every instruction at the highest clock of that run's plans
(A100 1410 MHz, A40 1740 MHz); a folder without such a plan is skipped (said on stderr).
From N.prof.json: per rank, the median over the micro-batches of every iteration but the
first (warm-up) of `time_breakdown.forward` and `.backward`; per stage (rank % pp: the ranks
of one stage share their clock plan in the artifact's 3D runs), the mean over its ranks.
Nothing else of the artifact is read: the other plans' measured iteration time and energy stay
for validation. Exit 2 on bad usage or a file without the fields, 1 when a file cannot be read.
"""
import csv
import json
import os
import re
import statistics
import sys

RUN = re.compile(r"^merak\+(?P<model>[^+]+)\+(?P<partition>[^+]+)\+dp(?P<dp>\d+)\+pp(?P<pp>\d+)"
                 r"\+tp(?P<tp>\d+)\+mbs(?P<mbs>\d+)\+nmb(?P<nmb>\d+)\+")


def fail(code, msg):
    print(f"extract_perseus_stage_work.py: {msg}", file=sys.stderr)
    sys.exit(code)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        fail(1, f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(2, f"{path}:{e.lineno}: not JSON ({e.msg})")


def plans(folder):
    out = []
    for name in os.listdir(folder):
        m = re.fullmatch(r"(\d+)\.sched\.json", name)
        if m and os.path.exists(os.path.join(folder, f"{m.group(1)}.prof.json")):
            out.append(int(m.group(1)))
    return sorted(out)


def fastest_plan(folder):
    """The lowest plan with every rank at the run's highest clock, and that clock; None if none."""
    clocks = {}
    for n in plans(folder):
        sched = load(os.path.join(folder, f"{n}.sched.json"))
        try:
            clocks[n] = [c for r in sched for c in r["power_states"]]
        except (TypeError, KeyError):
            fail(2, f"{folder}/{n}.sched.json: power_states: missing")
    if not clocks:
        return None, None
    top = max(max(c) for c in clocks.values())
    for n, c in clocks.items():
        if min(c) == top:
            return n, top
    return None, top


def stage_times(prof_path, pp):
    per_stage = [[] for _ in range(pp)]
    for r in load(prof_path):
        try:
            rank, tb = int(r["rank"]), r["time_breakdown"]
            fwd = [x for it in tb["forward"][1:] for x in it]
            bwd = [x for it in tb["backward"][1:] for x in it]
        except (TypeError, KeyError, ValueError):
            fail(2, f"{prof_path}: rank/time_breakdown.forward/backward: missing")
        if not fwd or not bwd:
            fail(2, f"{prof_path}: rank {rank}: no op timings after the first iteration")
        per_stage[rank % pp].append((statistics.median(fwd), statistics.median(bwd), len(fwd)))
    return per_stage


def main():
    if len(sys.argv) not in (2, 3):
        fail(2, "usage: extract_perseus_stage_work.py PERSEUS_DIR [OUT_CSV]")
    root = sys.argv[1]
    if not os.path.isdir(root):
        fail(1, f"{root}: not a folder")
    rows = []
    for gpu in sorted(os.listdir(root)):
        for layout in sorted(os.listdir(os.path.join(root, gpu))):
            for run in sorted(os.listdir(os.path.join(root, gpu, layout))):
                m = RUN.match(run)
                folder = os.path.join(root, gpu, layout, run)
                if not m or not os.path.isdir(folder):
                    continue
                n, top = fastest_plan(folder)
                if n is None:
                    print(f"extract_perseus_stage_work.py: {gpu}/{layout}/{run}: no plan at the "
                          f"highest clock ({top} MHz) on every rank; skipped", file=sys.stderr)
                    continue
                pp = int(m["pp"])
                rel = f"{gpu}/{layout}/{run}/{n}.prof.json"
                for s, ranks in enumerate(stage_times(os.path.join(folder, f"{n}.prof.json"), pp)):
                    if not ranks:
                        fail(2, f"{rel}: stage {s}: no rank")
                    rows.append({
                        "gpu": gpu, "model": m["model"], "partition": m["partition"], "stage": s,
                        "forward_s": f"{statistics.mean(r[0] for r in ranks):.5f}",
                        "backward_s": f"{statistics.mean(r[1] for r in ranks):.5f}",
                        "clock_mhz": top, "ops": sum(r[2] for r in ranks), "source": rel,
                    })
    if not rows:
        fail(2, f"{root}: no run folder with a plan at the highest clock")

    def write(out):
        w = csv.DictWriter(out, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)

    if len(sys.argv) == 3:
        try:
            with open(sys.argv[2], "w", encoding="utf-8", newline="") as out:
                write(out)
        except OSError as e:
            fail(1, f"{sys.argv[2]}: {e.strerror}")
    else:
        write(sys.stdout)


if __name__ == "__main__":
    main()
