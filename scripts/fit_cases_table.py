#!/usr/bin/env python3
"""docs/simulator.md's table of `flexwatt fit` on synthetic logs, from one run of test_sim's
FitCases tests (tests/sim/fit_cases_test.cpp prints a `[fit-case]` line per figure: the log's
value, then the twin's). Per case: the twin's mean, p95 and peak 30 s mean against the log's,
the worst error of the share of 1/5/30 s means above the two budgets, and the case's own
figures. Part of `make results` (scripts/results.sh splices it between the fit-cases markers).

Usage: scripts/fit_cases_table.py TEST_SIM_BIN | --from FILE
  (--from: a saved `test_sim --gtest_filter='FitCases.*'` output)
Exit 2 on bad arguments or a case without the lines its row needs (naming the case and line),
1 when the test binary fails or the file is missing.
"""
import os
import re
import subprocess
import sys

# (label, the test's case name, the "other" column from that case's own lines). The labels
# describe the synthetic logs tests/sim/fit_cases_test.cpp makes (its constants).
CASES = [
    ("aperiodic training (common noise τ 0.3 s), pauses 15 s every 40 s", "aperiodic",
     lambda t: "max acf 1–5 s {1} (log {0}), node sd {3} vs {2} W".format(
         *need(t, r"aperiodic: max acf 1-5 s ([0-9.]+) vs ([0-9.]+); node sd ([0-9.]+) vs ([0-9.]+) W", "acf"))),
    ("3 s step waveform, pauses every 60 s", "periodic",
     lambda t: "dominant period {1} vs {0} s".format(
         *need(t, r"periodic: dominant period ([0-9.]+) vs ([0-9.]+) s", "dominant period"))),
    ("two populations: 16.5 s every 28 s, ~100 s every 8th", "two pause populations", lambda t: ""),
    ("the same with two long pauses in 25 min", "rare long pauses",
     lambda t: "{2} long found, regular {1} s every {0} s".format(
         *need(t, r"rare long: \d+ regular every ([0-9.]+) s, ([0-9.]+) s; (\d+) long", "rare long"))),
    ("A100, setup 116 W for 120 s, training 250 W, pauses at 90 W", "setup",
     lambda t: "span starts at {0} s".format(*need(t, r"setup: span from ([0-9.]+) s", "span from"))),
    ("H100 at 200 W, nearly all training", "light",
     lambda t: "{0} pauses found (3 in the log)".format(*need(t, r"light: (\d+) low phases", "low phases"))),
]
MID = ("log starting 25 s into a 40 s burst",
       r"mid-training start: every ([0-9.]+) s \(true 40\), jitter ([0-9.]+) \(true 0.05\)")


class Missing(Exception):
    pass


def need(text, pattern, what):
    m = re.search(r"^\[fit-case\] " + pattern, text, re.M)
    if not m:
        raise Missing(what)
    return m.groups()


def pct(log, twin):
    d = (float(twin) / float(log) - 1) * 100
    s = f"{abs(d):.1f}"
    return ("+" if d > 0 and s != "0.0" else "−" if d < 0 and s != "0.0" else "") + s + " %"


def table(text):
    out = ["| case | mean | p95 | peak 30 s mean | worst violation-rate error | other |",
           "|---|---|---|---|---|---|"]
    for label, name, other in CASES:
        try:
            m = need(text, re.escape(name) + r": mean ([0-9.]+) vs ([0-9.]+) W, p95 ([0-9.]+) vs ([0-9.]+) W, "
                     r"peak30 ([0-9.]+) vs ([0-9.]+) W", "mean/p95/peak30")
            errs = [abs(float(a) - float(b)) for a, b in re.findall(
                r"^\[fit-case\] " + re.escape(name) + r": budget [0-9.]+ W, +\d+ s means above: ([0-9.]+) vs ([0-9.]+)",
                text, re.M)]
            if len(errs) != 6:
                raise Missing(f"6 'means above' lines (found {len(errs)})")
            o = other(text)
        except Missing as e:
            print(f"fit_cases_table.py: case '{name}': no [fit-case] line for {e}", file=sys.stderr)
            sys.exit(2)
        out.append(f"| {label} | {pct(m[0], m[1])} | {pct(m[2], m[3])} | {pct(m[4], m[5])} | {max(errs):.3f} |"
                   + (f" {o} |" if o else " |"))
    try:
        every, jitter = need(text, MID[1], "mid-training start")
    except Missing as e:
        print(f"fit_cases_table.py: no [fit-case] line for {e}", file=sys.stderr)
        sys.exit(2)
    out.append(f"| {MID[0]} | | | | | spacing {every} s (true 40), jitter {jitter} (true 0.05) |")
    return "\n".join(out)


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) == 2 and argv[0] == "--from":
        if not os.path.exists(argv[1]):
            print(f"fit_cases_table.py: {argv[1]}: no such file", file=sys.stderr)
            return 1
        text = open(argv[1], encoding="utf-8").read()
    elif len(argv) == 1 and not argv[0].startswith("-"):
        r = subprocess.run([argv[0], "--gtest_filter=FitCases.*"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"fit_cases_table.py: {argv[0]} --gtest_filter='FitCases.*' failed ({r.returncode})",
                  file=sys.stderr)
            return 1
        text = r.stdout
    else:
        print("usage: scripts/fit_cases_table.py TEST_SIM_BIN | --from FILE", file=sys.stderr)
        return 2
    print(table(text))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
