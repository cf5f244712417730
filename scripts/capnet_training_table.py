#!/usr/bin/env python3
"""docs/caps.md's table of the shipped capnet policies' training, from their logs
(policies/capnet-*.train.csv, written by `flexwatt train --task caps`): per policy its alpha
(from the file name), the iteration whose mean policy scored best on the validation set (the one
saved; the first of equal scores), that score, the iterations run and the training's wall time.
Part of `make results` (scripts/results.sh splices it between the caps-training markers).

Usage: scripts/capnet_training_table.py POLICY_DIR
Exit 2 on bad arguments or a log without the columns iteration, validation, wall_s (naming the
file and line), 1 when POLICY_DIR holds no capnet-*.train.csv.
"""
import csv
import glob
import os
import re
import sys


def main(argv):
    if len(argv) != 1 or argv[0].startswith("-"):
        if argv and argv[0] in ("-h", "--help"):
            print(__doc__)
            return 0
        print("usage: scripts/capnet_training_table.py POLICY_DIR", file=sys.stderr)
        return 2
    if not os.path.isdir(argv[0]):
        print(f"capnet_training_table.py: {argv[0]}: not a directory", file=sys.stderr)
        return 2
    logs = sorted(glob.glob(os.path.join(argv[0], "capnet-*.train.csv")),
                  key=lambda p: float(re.search(r"alpha([0-9.]+)\.train", p).group(1))
                  if re.search(r"alpha([0-9.]+)\.train", p) else 1e9)
    if not logs:
        print(f"capnet_training_table.py: {argv[0]}: no capnet-*.train.csv", file=sys.stderr)
        return 1
    print("| policy | α | best iteration (saved) | validation reward | iterations | train wall |")
    print("|---|---|---|---|---|---|")
    for path in logs:
        m = re.search(r"alpha([0-9.]+)\.train\.csv$", path)
        best, last = None, None
        with open(path, encoding="utf-8", newline="") as f:
            rows = csv.DictReader(f)
            for c in ("iteration", "validation", "wall_s"):
                if c not in (rows.fieldnames or []):
                    print(f"{path}:1: header: no column '{c}'", file=sys.stderr)
                    return 2
            for n, r in enumerate(rows, 2):
                try:
                    it, wall = int(r["iteration"]), float(r["wall_s"])
                    v = float(r["validation"]) if r["validation"] else None
                except (TypeError, ValueError):
                    print(f"{path}:{n}: iteration, validation or wall_s: not a number", file=sys.stderr)
                    return 2
                if v is not None and (best is None or v > best[0]):
                    best = (v, it)
                last = (it, wall)
        if best is None or last is None:
            print(f"{path}: no validation score", file=sys.stderr)
            return 2
        name = os.path.basename(path).replace(".train.csv", ".json")
        print(f"| `{name}` | {m.group(1) if m else '?'} | {best[1]} | {best[0]:.4f} | {last[0]} | {last[1]:.0f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
