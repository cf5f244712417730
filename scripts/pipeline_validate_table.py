#!/usr/bin/env python3
"""docs/simulator.md's two `flexwatt pipeline validate` tables, from its --json outputs.

Usage: scripts/pipeline_validate_table.py CAP_RESPONSE.json GPU_MODEL.json OUT_DIR
  CAP_RESPONSE.json  `flexwatt pipeline validate --json` (the cap response measured on the
                     uniform runs, the default model)
  GPU_MODEL.json     the same with --gpu-model (the earlier model: the GPU power model's clock)
Writes OUT_DIR/pipeline-validate-gpu-model.md (the GPU model: fit errors, rows within the
tolerance in time and energy, largest errors), OUT_DIR/pipeline-validate.md (both models
side by side and the work-split diagnostic) and OUT_DIR/pipeline-validate-profiled.md (the
work split profiled on the jobs: CAP_RESPONSE.json must come from a run with --stage-work;
rows inside the calibrated cap range within the tolerance, rows flagged outside it, rows
without a profile). Exit 2 on bad usage or a JSON without the fields, 1 when a file cannot be
read.
"""
import json
import os
import sys

NAMES = {"a100-pcie-80gb": "A100-PCIe", "a40": "A40", "a100-sxm4-80gb": "A100-SXM"}


def fail(code, msg):
    print(f"pipeline_validate_table.py: {msg}", file=sys.stderr)
    sys.exit(code)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except OSError as e:
        fail(1, f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(2, f"{path}:{e.lineno}: not JSON ({e.msg})")
    sets = d.get("sets")
    if not isinstance(sets, list) or not sets:
        fail(2, f"{path}: sets: missing (not `flexwatt pipeline validate --json` output)")
    for i, s in enumerate(sets):
        for k in ("gpu", "fits", "rows", "within"):
            if k not in s:
                fail(2, f"{path}: sets.{i}.{k}: missing")
    return {s["gpu"]: s for s in sets}


def pct(x):
    return f"{abs(x) * 100:.1f} %"


def stages(s):
    """Stages of the set's pipelines: the per-stage caps of its rows (one limit per stage)."""
    n = sorted({len(r["caps_w"]) for r in s["rows"]})
    return " and ".join(str(k) for k in n) if n else None


def label(gpu, s, preset):
    n = stages(s)
    name = NAMES.get(gpu, gpu)
    text = f"{name}, {n} stages" if n else name
    return f"{text} (`{gpu}`)" if preset else text


def fit_range(s):
    errs = [f["uniform_max_err"] for f in s["fits"]]
    lo, hi = min(errs), max(errs)
    return f"{lo * 100:.1f}–{hi * 100:.1f} %", max(s["fits"], key=lambda f: f["uniform_max_err"])


def within(rows, key, tol):
    return sum(1 for r in rows if abs(r[key]) <= tol)


def main(argv):
    if len(argv) != 4 or argv[1] in ("-h", "--help"):
        fail(2, "usage: scripts/pipeline_validate_table.py CAP_RESPONSE.json GPU_MODEL.json OUT_DIR")
    cap, gm = load(argv[1]), load(argv[2])
    out = argv[3]
    if not os.path.isdir(out):
        fail(2, f"{out}: not a directory")
    tol = 0.05
    with open(os.path.join(out, "pipeline-validate-gpu-model.md"), "w", encoding="utf-8") as f:
        f.write("| GPU (preset) | fit on uniform limits (max \\|error\\| per model) | per-stage-limit rows "
                "within ±5 % in time and energy | largest errors |\n|---|---|---|---|\n")
        for gpu, s in gm.items():
            rows = s["rows"]
            rng, _ = fit_range(s)
            t = max(abs(r["time_err"]) for r in rows)
            e = max(abs(r["energy_err"]) for r in rows)
            f.write(f"| {label(gpu, s, True)} | {rng} | **{s['within']} of {len(rows)}** (time "
                    f"{within(rows, 'time_err', tol)}, energy {within(rows, 'energy_err', tol)}) | "
                    f"time {pct(t)}, energy {pct(e)} |\n")
    with open(os.path.join(out, "pipeline-validate.md"), "w", encoding="utf-8") as f:
        f.write("| GPU | uniform runs (max \\|error\\| per model) | rows within ±5 % (time and energy) | "
                "diagnostic: work split fitted to the rows |\n|---|---|---|---|\n")
        for gpu, s in cap.items():
            g = gm.get(gpu)
            if g is None:
                fail(2, f"{argv[2]}: no set for {gpu}")
            rng, worst = fit_range(s)
            grng, _ = fit_range(g)
            split = (f"{s['split_within']} of {s['split_rows']}" if s.get("split_rows") else "—")
            f.write(f"| {label(gpu, s, False)} | {rng}, largest {worst['model']} (GPU model: {grng}) | "
                    f"**{s['within']} of {len(s['rows'])}** (GPU model: {g['within']} of "
                    f"{len(g['rows'])}) | {split} |\n")

    with open(os.path.join(out, "pipeline-validate-profiled.md"), "w", encoding="utf-8") as f:
        f.write("| GPU | uniform runs, profiled split (max \\|error\\| per model) | calibrated caps | "
                "rows inside the calibrated range within ±5 % (time and energy) | outside the "
                "calibrated range (flagged, not predicted) | not profiled | largest errors inside "
                "the range |\n|---|---|---|---|---|---|---|\n")
        for gpu, s in cap.items():
            for k in ("profiled_fits", "profiled_rows", "profiled_within",
                      "outside_calibrated_range", "not_profiled"):
                if k not in s:
                    fail(2, f"{argv[1]}: {gpu}: {k}: missing (run validate with --stage-work)")
            fits = s["profiled_fits"]
            if not fits:
                fail(2, f"{argv[1]}: {gpu}: profiled_fits: empty")
            errs = [x["uniform_max_err"] for x in fits]
            worst = max(fits, key=lambda x: x["uniform_max_err"])
            caps = sorted({f"{int(x['calibrated_range_w'][0])}–{int(x['calibrated_range_w'][1])} W"
                           for x in fits})
            pred = [r["profiled"] for r in s["rows"] if r["profiled"]["status"] == "predicted"]
            t = max((abs(p["time_err"]) for p in pred), default=0)
            e = max((abs(p["energy_err"]) for p in pred), default=0)
            f.write(f"| {label(gpu, s, False)} | {min(errs) * 100:.1f}–{max(errs) * 100:.1f} %, "
                    f"largest {worst['model']} | {', '.join(caps)} | **{s['profiled_within']} of "
                    f"{s['profiled_rows']}** (time {within(pred, 'time_err', tol)}, energy "
                    f"{within(pred, 'energy_err', tol)}) | {s['outside_calibrated_range']} | "
                    f"{s['not_profiled']} | time {pct(t)}, energy {pct(e)} |\n")


if __name__ == "__main__":
    main(sys.argv)
