#!/usr/bin/env python3
"""Read-only NVML probe: measures, per GPU, what the fake libnvidia-ml.so.1
(tests/telemetry/fake_nvml/fake_nvml.cpp, `profile G a100|h100|h200|b200`) assumes about the
real driver, and says per item whether the fake's profile for that model MATCHes or DIFFERS.

Per GPU, for --duration-s seconds (GPUs one after another), it samples every --interval-ms:
  - nvmlDeviceGetTotalEnergyConsumption: the counter's update period (median time between
    changes of its value; when they are regular, their times fitted to a grid, since each
    observed one is late by up to a sample); its rate over trailing 1 s windows is the
    reference;
  - nvmlDeviceGetPowerUsage, field 185 (NVML_FI_DEV_POWER_AVERAGE), field 186
    (NVML_FI_DEV_POWER_INSTANT): supported or not_supported, and whether each behaves as a
    trailing 1 s average (avg_1s) or as instantaneous power (instant). For each interval
    between two counter updates, the mean of the readings taken in it is compared with the
    1 s energy-rate reference (avg_1s) and with the energy rate over that interval (the
    instantaneous estimate); the smaller RMS deviation, by a factor of 2, names the verdict,
    else `unclear`. On a steady load both references agree and nothing can be told: run a
    training job or a periodic load while probing;
  - each call's latency (median and max, ms).

It only reads: nvmlInit_v2, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
nvmlDeviceGetName, nvmlDeviceGetUUID, nvmlDeviceGetPowerUsage, nvmlDeviceGetFieldValues (185,
186), nvmlDeviceGetTotalEnergyConsumption, nvmlShutdown. Never a limit, clock or mode.

Usage: scripts/nvml_probe.py [--duration-s S] [--interval-ms MS] [--gpus 0,1] [--json FILE]
  Loads $FLEXWATT_NVML_LIBRARY, else libnvidia-ml.so.1. Prints a table; --json FILE also
  writes the results as JSON (FILE '-': stdout, instead of the table).
Exit 0: every compared item MATCHes (or could not be checked: UNCHECKED); 1: some item
DIFFERS; 2: bad usage, NVML missing or failing, no GPU.
"""
import argparse
import bisect
import ctypes
import json
import os
import statistics
import sys
import time

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
FIELD_POWER_AVERAGE = 185
FIELD_POWER_INSTANT = 186
POWER_SCOPE_GPU = 0

# What the fake assumes per model (fake_nvml.cpp, apply_profile). The counter periods are
# assumptions, not documented by NVIDIA: this probe is how they get checked.
FAKE_PROFILES = {
    "a100": {"PowerUsage": "instant", "field_185": "not_supported", "field_186": "instant",
             "counter_update_ms": 100},
    "h100": {"PowerUsage": "avg_1s", "field_185": "avg_1s", "field_186": "instant",
             "counter_update_ms": 20},
}
FAKE_PROFILES["h200"] = FAKE_PROFILES["b200"] = FAKE_PROFILES["h100"]

READINGS = ["PowerUsage", "field_185", "field_186"]
STEADY_MSG = "load too steady: run a training job or a periodic load while checking"


class Value(ctypes.Union):  # nvmlValue_t
    _fields_ = [("dVal", ctypes.c_double), ("uiVal", ctypes.c_uint),
                ("ulVal", ctypes.c_ulong), ("ullVal", ctypes.c_ulonglong),
                ("sllVal", ctypes.c_longlong), ("siVal", ctypes.c_int),
                ("usVal", ctypes.c_ushort)]


class FieldValue(ctypes.Structure):  # nvmlFieldValue_t
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint),
                ("timestamp", ctypes.c_longlong), ("latencyUsec", ctypes.c_longlong),
                ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int), ("value", Value)]


assert ctypes.sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes"
VALUE_MEMBERS = ["dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal"]


class Nvml:
    """The read calls this probe makes; each returns (nvmlReturn, value or None)."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)

    def call(self, name, *args):
        return getattr(self.lib, name)(*args)

    def init(self):
        return self.call("nvmlInit_v2")

    def shutdown(self):
        return self.call("nvmlShutdown")

    def count(self):
        n = ctypes.c_uint()
        return self.call("nvmlDeviceGetCount_v2", ctypes.byref(n)), n.value

    def handle(self, index):
        h = ctypes.c_void_p()
        return self.call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(h)), h

    def text(self, name, h):
        buf = ctypes.create_string_buffer(96)
        rc = self.call(name, h, buf, ctypes.c_uint(len(buf)))
        return rc, buf.value.decode(errors="replace") if rc == NVML_SUCCESS else None

    def power_usage_w(self, h):
        mw = ctypes.c_uint()
        rc = self.call("nvmlDeviceGetPowerUsage", h, ctypes.byref(mw))
        return rc, mw.value / 1000.0 if rc == NVML_SUCCESS else None

    def field_w(self, h, field_id):
        v = (FieldValue * 1)()
        v[0].fieldId, v[0].scopeId = field_id, POWER_SCOPE_GPU
        rc = self.call("nvmlDeviceGetFieldValues", h, ctypes.c_int(1), v)
        if rc != NVML_SUCCESS:
            return rc, None
        if v[0].nvmlReturn != NVML_SUCCESS:
            return v[0].nvmlReturn, None
        member = VALUE_MEMBERS[v[0].valueType] if 0 <= v[0].valueType < 7 else "uiVal"
        return NVML_SUCCESS, getattr(v[0].value, member) / 1000.0

    def energy_mj(self, h):
        mj = ctypes.c_ulonglong()
        rc = self.call("nvmlDeviceGetTotalEnergyConsumption", h, ctypes.byref(mj))
        return rc, mj.value if rc == NVML_SUCCESS else None


def timed(fn, *args):
    """(midpoint time s, latency s, rc, value) of one call."""
    t0 = time.perf_counter()
    rc, value = fn(*args)
    t1 = time.perf_counter()
    return (t0 + t1) / 2, t1 - t0, rc, value


def sample_gpu(nvml, h, duration_s, interval_s):
    """Samples one GPU; per call: its points [(t, value)], latencies [s] and return codes."""
    calls = {
        "PowerUsage": lambda: nvml.power_usage_w(h),
        "field_185": lambda: nvml.field_w(h, FIELD_POWER_AVERAGE),
        "field_186": lambda: nvml.field_w(h, FIELD_POWER_INSTANT),
        "TotalEnergyConsumption": lambda: nvml.energy_mj(h),
    }
    data = {name: {"points": [], "latency": [], "codes": {}} for name in calls}
    start = time.perf_counter()
    tick = 0
    while time.perf_counter() - start < duration_s:
        for name, fn in calls.items():
            d = data[name]
            if d["codes"].get(NVML_ERROR_NOT_SUPPORTED):
                continue  # asked once: not supported stays not supported
            t, lat, rc, value = timed(fn)
            d["latency"].append(lat)
            d["codes"][rc] = d["codes"].get(rc, 0) + 1
            if rc == NVML_SUCCESS:
                d["points"].append((t, value))
        tick += 1
        time.sleep(max(0.0, start + tick * interval_s - time.perf_counter()))
    return data


def status_of(d):
    if d["points"]:
        return "ok"
    if NVML_ERROR_NOT_SUPPORTED in d["codes"]:
        return "not_supported"
    return "error " + ",".join(str(c) for c in sorted(d["codes"]))


def counter_updates(points):
    """[(t, mJ)] of each change of the counter; t: midway between the last sample showing the
    old value and the first showing the new one."""
    return [((t0 + t1) / 2, e1) for (t0, e0), (t1, e1) in zip(points, points[1:]) if e1 != e0]


def regular_updates(updates, sample_gap):
    """(updates, period s, regular?): when the counter changes on a regular period, its update
    times fitted to a grid t0 + k * period. Each observed time is off by up to half a sample
    gap, which over a 20 ms update interval is a 10 % error in its energy rate; the grid's
    times are exact to a small fraction of that. When 95 % of the observed times lie within
    one sample gap of the grid, the counter is regular; else the observed times are kept."""
    gaps = [b[0] - a[0] for a, b in zip(updates, updates[1:])]
    if len(gaps) < 10:
        return updates, (statistics.median(gaps) if len(gaps) >= 3 else None), False
    period = statistics.median(gaps)  # a multiple of the sample gap: only a first guess
    ks = [0]
    for gap in gaps:
        ks.append(ks[-1] + round(gap / period))
    k_mean, t_mean = statistics.fmean(ks), statistics.fmean(t for t, _ in updates)
    slope = (sum((k - k_mean) * (t - t_mean) for k, (t, _) in zip(ks, updates))
             / sum((k - k_mean) ** 2 for k in ks))
    grid = [t_mean + (k - k_mean) * slope for k in ks]
    residuals = sorted(abs(t - g) for g, (t, _) in zip(grid, updates))
    if len(set(ks)) < len(ks) or residuals[int(0.95 * (len(residuals) - 1))] > sample_gap:
        return updates, period, False
    return [(g, e) for g, (_, e) in zip(grid, updates)], slope, True


def energy_at(updates, times, t):
    """Energy (mJ) at time t, linear between counter updates (times: their times)."""
    i = bisect.bisect_right(times, t)
    if i == 0 or i == len(updates):
        return None
    (ta, ea), (tb, eb) = updates[i - 1], updates[i]
    return ea + (eb - ea) * (t - ta) / (tb - ta)


def rate_1s_w(updates, times, t):
    """The reference: mean power (W) over [t - 1 s, t] from the counter."""
    a, b = energy_at(updates, times, t - 1.0), energy_at(updates, times, t)
    return None if a is None or b is None else (b - a) / 1000.0


def rms(xs):
    return (sum(x * x for x in xs) / len(xs)) ** 0.5 if xs else None


def classify(points, updates):
    """RMS deviation (W) of a reading from the 1 s reference and from the instantaneous
    estimate, per interval between counter updates; the load's swing (RMS of the two
    references' difference) and the verdict with a note."""
    times = [p[0] for p in points]
    update_times = [u[0] for u in updates]
    dev_avg, dev_inst, swing = [], [], []
    for (ta, ea), (tb, eb) in zip(updates, updates[1:]):
        if ta - 1.0 < updates[0][0]:
            continue  # no trailing 1 s of counter yet
        inst = (eb - ea) / (tb - ta) / 1000.0  # W over this update interval
        lo, hi = bisect.bisect_left(times, ta), bisect.bisect_left(times, tb)
        refs = [rate_1s_w(updates, update_times, t) for t in times[lo:hi]]
        if not refs or None in refs:
            continue
        mean_x = statistics.fmean(v for _, v in points[lo:hi])
        mean_ref = statistics.fmean(refs)
        dev_avg.append(mean_x - mean_ref)
        dev_inst.append(mean_x - inst)
        swing.append(inst - mean_ref)
    r = {"rms_vs_avg_1s_w": rms(dev_avg), "rms_vs_instant_w": rms(dev_inst),
         "load_swing_w": rms(swing), "intervals": len(dev_avg)}
    if len(dev_avg) < 5:
        r["verdict"], r["note"] = "unclear", "too few counter intervals with readings"
    elif r["load_swing_w"] < max(5.0, 0.03 * statistics.fmean(v for _, v in points)):
        r["verdict"], r["note"] = "unclear", STEADY_MSG
    elif r["rms_vs_avg_1s_w"] <= 0.5 * r["rms_vs_instant_w"]:
        r["verdict"] = "avg_1s"
    elif r["rms_vs_instant_w"] <= 0.5 * r["rms_vs_avg_1s_w"]:
        r["verdict"] = "instant"
    else:
        r["verdict"], r["note"] = "unclear", "matches neither the 1 s average nor the instant"
    return r


def latency_ms(d):
    lat = d["latency"]
    return {"median": 1000 * statistics.median(lat), "max": 1000 * max(lat)} if lat else None


def model_of(name):
    low = (name or "").lower()
    return next((m for m in ("a100", "h100", "h200", "b200") if m in low), None)


def compare(gpu):
    """MATCH / DIFFERS / UNCHECKED per item against the fake's profile for the GPU's model."""
    profile = FAKE_PROFILES.get(gpu["model"])
    if profile is None:
        return []
    items = []
    for name in READINGS:
        r = gpu["readings"][name]
        measured = r["status"] if r["status"] != "ok" else r["verdict"]
        expected = profile[name]
        if measured == "unclear" and expected != "not_supported":
            result = "UNCHECKED"
        else:
            result = "MATCH" if measured == expected else "DIFFERS"
        items.append({"item": name, "measured": measured, "expected": expected, "result": result})
    c = gpu["energy_counter"]
    expected = profile["counter_update_ms"]
    if c["update_ms"] is None:
        measured, result = c["status"], "DIFFERS" if c["status"] != "ok" else "UNCHECKED"
    else:
        measured = round(c["update_ms"], 1)
        # Resolution: the counter is seen to change only at a sample.
        tolerance = max(0.25 * expected, 2 * gpu["sample_interval_ms"])
        result = "MATCH" if abs(c["update_ms"] - expected) <= tolerance else "DIFFERS"
    items.append({"item": "counter_update_ms", "measured": measured, "expected": expected,
                  "result": result, "assumption": True})
    return items


def probe_gpu(nvml, index, duration_s, interval_s):
    rc, h = nvml.handle(index)
    if rc != NVML_SUCCESS:
        print(f"nvml_probe: GPU {index}: nvmlDeviceGetHandleByIndex_v2 failed: NVML error {rc}",
              file=sys.stderr)
        return None
    _, name = nvml.text("nvmlDeviceGetName", h)
    _, uuid = nvml.text("nvmlDeviceGetUUID", h)
    data = sample_gpu(nvml, h, duration_s, interval_s)
    energy = data["TotalEnergyConsumption"]
    sample_gaps = [b[0] - a[0] for a, b in zip(energy["points"], energy["points"][1:])]
    sample_gap = statistics.median(sample_gaps) if sample_gaps else interval_s
    observed = counter_updates(energy["points"])
    updates, period, regular = regular_updates(observed, sample_gap)
    gaps = [b[0] - a[0] for a, b in zip(observed, observed[1:])]
    counter = {"status": status_of(energy), "update_ms": period and 1000 * period,
               "observed_median_ms": 1000 * statistics.median(gaps) if gaps else None,
               "updates": len(updates), "regular": regular, "latency_ms": latency_ms(energy)}
    if period and sample_gap > period / 2:
        counter["note"] = "sampled too slowly to resolve the counter's updates"
    elif period and not regular:
        counter["note"] = "irregular updates: the instantaneous estimate is noisy"
    gpu = {
        "index": index, "name": name, "uuid": uuid, "model": model_of(name),
        "samples": len(energy["latency"]), "sample_interval_ms": 1000 * sample_gap,
        "energy_counter": counter, "readings": {},
    }
    for name in READINGS:
        d = data[name]
        r = {"status": status_of(d), "latency_ms": latency_ms(d)}
        if d["points"]:
            r["mean_w"] = statistics.fmean(v for _, v in d["points"])
            if len(updates) >= 3:
                r.update(classify(d["points"], updates))
            else:
                r["verdict"], r["note"] = "unclear", "no energy counter to compare with"
        gpu["readings"][name] = r
    gpu["compare"] = compare(gpu)
    return gpu


def fmt(x, spec=".1f", none="-"):
    return none if x is None else format(x, spec)


def print_table(result, out):
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"nvml_probe: {result['library']}, {result['duration_s']:g} s per GPU, "
      f"sampling every {result['interval_ms']:g} ms")
    for g in result["gpus"]:
        c = g["energy_counter"]
        p(f"\nGPU {g['index']}: {g['name']} ({g['uuid']}), fake profile: {g['model'] or 'none'}")
        p(f"  {g['samples']} samples, every {fmt(g['sample_interval_ms'], '.2f')} ms; "
          f"energy counter {c['status']}: updates every {fmt(c['update_ms'])} ms "
          f"({c['updates']} updates{', regular' if c['regular'] else ''}), "
          f"latency {fmt_lat(c['latency_ms'])} ms")
        if c.get("note"):
            p(f"  energy counter: {c['note']}")
        p(f"  {'reading':<11} {'status':<14} {'verdict':<8} {'mean W':>7} {'rms vs 1s':>9} "
          f"{'rms vs inst':>11} {'swing':>6}  latency med/max ms")
        notes = []
        for name in READINGS:
            r = g["readings"][name]
            p(f"  {name:<11} {r['status']:<14} {r.get('verdict', '-'):<8} "
              f"{fmt(r.get('mean_w')):>7} {fmt(r.get('rms_vs_avg_1s_w')):>9} "
              f"{fmt(r.get('rms_vs_instant_w')):>11} {fmt(r.get('load_swing_w')):>6}  "
              f"{fmt_lat(r['latency_ms'])}")
            if r.get("note"):
                notes.append(f"  {name}: {r['note']}")
        for n in dict.fromkeys(notes):
            p(n)
        if not g["compare"]:
            p("  no fake profile for this model: nothing compared")
            continue
        p(f"  compared with the fake's profile {g['model']}:")
        for i in g["compare"]:
            extra = " (an assumption of the fake)" if i.get("assumption") else ""
            p(f"    {i['item']:<18} measured {str(i['measured']):<14} fake {str(i['expected']):<14} "
              f"{i['result']}{extra}")
    p(f"\n{result['differs']} item(s) DIFFER from the fake"
      + (": fix the fake (tests/telemetry/fake_nvml/fake_nvml.cpp, apply_profile)"
         if result["differs"] else ""))


def fmt_lat(lat):
    return "-" if lat is None else f"{lat['median']:.3f}/{lat['max']:.3f}"


def index_list(text):
    """--gpus 0,2 -> [0, 2]."""
    try:
        return [int(i) for i in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of GPU indices: {text}") from None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration-s", type=float, default=10.0, help="seconds per GPU (>= 3)")
    ap.add_argument("--interval-ms", type=float, default=5.0, help="sampling interval")
    ap.add_argument("--gpus", type=index_list, help="comma-separated NVML indices (default: all)")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON ('-': stdout)")
    args = ap.parse_args()
    if args.duration_s < 3 or args.interval_ms <= 0:
        print("nvml_probe: --duration-s must be >= 3 and --interval-ms > 0", file=sys.stderr)
        return 2
    path = os.environ.get("FLEXWATT_NVML_LIBRARY") or "libnvidia-ml.so.1"
    try:
        nvml = Nvml(path)
        rc = nvml.init()
    except (OSError, AttributeError) as e:
        print(f"nvml_probe: cannot load NVML from {path}: {e}", file=sys.stderr)
        return 2
    if rc != NVML_SUCCESS:
        print(f"nvml_probe: nvmlInit_v2 failed: NVML error {rc}", file=sys.stderr)
        return 2
    try:
        rc, n = nvml.count()
        if rc != NVML_SUCCESS:
            print(f"nvml_probe: nvmlDeviceGetCount_v2 failed: NVML error {rc}", file=sys.stderr)
            return 2
        if n == 0:
            print("nvml_probe: NVML reports no GPUs", file=sys.stderr)
            return 2
        indices = args.gpus if args.gpus is not None else list(range(n))
        bad = [i for i in indices if not 0 <= i < n]
        if bad:
            print(f"nvml_probe: no GPU index {bad[0]} ({n} GPU(s))", file=sys.stderr)
            return 2
        gpus = [probe_gpu(nvml, i, args.duration_s, args.interval_ms / 1000.0) for i in indices]
        if None in gpus:
            return 2
    finally:
        nvml.shutdown()
    result = {"library": path, "duration_s": args.duration_s, "interval_ms": args.interval_ms,
              "gpus": gpus,
              "differs": sum(i["result"] == "DIFFERS" for g in gpus for i in g["compare"])}
    if args.json == "-":
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        print_table(result, sys.stdout)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
                f.write("\n")
    return 1 if result["differs"] else 0


if __name__ == "__main__":
    sys.exit(main())
