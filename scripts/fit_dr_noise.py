#!/usr/bin/env python3
"""Fit the `dr replay` plant's noise and dips to the Phoenix field data (issue 45).

Reads the field demonstration's measured one-minute power (data/emerald-phoenix/, the same bytes
as the project's shared copy shared/data/emerald-phoenix/; its README gives the source) and fits,
outside the DR events only:

  * per job (aps_job_power_w.csv) and for the site total (that file's total, and
    caiso_reenactment_total_w.csv): the level, a linear detrend (least squares over the span's
    minutes, refitted without the dip minutes), the sd of the residual 1-minute means as a
    fraction of the level, and the residual's lag-one correlation (-> noise_tau_s);
  * whether the jobs' noises are correlated: the site's residual variance against the jobs'
    residual variances summed as if independent (the excess, if any, is a site-common
    component);
  * the periodic dips: minutes below the line by more than max(4 robust sd, 5 % of the line);
    per dip its lost energy (60 s x the summed shortfall of the dip minutes and one minute either
    side, in seconds at full level) and its deepest minute (an upper bound on the dip's level);
    the period from the spacing of one job's consecutive dips over the whole record (each dip
    found against a +-7-minute running median, 10 % below it; none within 3 minutes of a move of
    the field's projection, aps_projection_w.csv: the control's moves, not the job's own dips),
    where the job did not pause between them (a restart begins a new cycle); the median.

Spans (minutes, inclusive; the jobs' times are UTC-7):
  APS 2025-05-01 (aps_job_power_w.csv): pre-event 16:10-17:39 (the event starts 17:40), post-event
    21:25-22:49 (the projection is back at the baseline from 21:19:25; 5 minutes for the resumed
    jobs to settle);
  CAISO re-enactment (caiso_reenactment_total_w.csv): pre-event 14:00-15:04 (the site starts
    shedding at 15:05, before the 15:11 step), post-event 20:20-21:24 (recovery 20:07-20:16).

What the simulator takes (the C++ defaults, src/studies/dr_event.hpp; tests/cli/fit_dr_noise.sh
checks that they agree with this script's printout):
  noise_frac_1min  the per-job 1-minute sd that gives, for the APS site's six jobs combined as
                   independent, the site's measured sd: sqrt(sum (f_j L_j)^2 / sum L_j^2) (the
                   jobs' fractions weighted by their squared levels), pooled over both APS spans;
  noise_tau_s      kept at 5 s (assumption): 1-minute means cannot resolve a correlation time
                   well under a minute; the script prints the bound the data give;
  site-common      none when the site's variance is within the jobs' independent sum;
  dips             period: the median spacing; level: the lowest deepest-minute fraction of the
                   training jobs' dips (the largest level every observed dip allows); duration:
                   the median over those dips of lost energy / (1 - level).

Usage: fit_dr_noise.py [--data-dir DIR] [--json]
Python 3 standard library only; deterministic (no randomness).
"""

import argparse
import csv
import json
import math
import os
import statistics
import sys

APS_PRE = ("16:10", "17:39")
APS_POST = ("21:25", "22:49")
CAISO_PRE = ("14:00", "15:04")
CAISO_POST = ("20:20", "21:24")
DIP_ROBUST_Z = 4.0  # a dip minute: below the line by more than this many robust sds ...
DIP_MIN_FRAC = 0.05  # ... and by more than this share of the line
PERIOD_DIP_FRAC = 0.10  # whole-record dips (period): 10 % under the +-7-minute running median
PAUSE_FRAC = 0.05  # a minute under 5 % of the job's running median: paused
MOVE_GUARD_MIN = 3  # whole-record dips within this many minutes of a projection move: control
TAU_KEPT_S = 5.0  # the plant's noise_tau_s (assumption, kept: see above)
MINUTE_S = 60.0


def minute_of(ts):
    """Minutes since midnight of 'YYYY-MM-DD HH:MM:SS-07:00' or 'HH:MM'."""
    hhmm = ts.split(" ")[1] if " " in ts else ts
    h, m = hhmm.split(":")[:2]
    return int(h) * 60 + int(m)


def hhmm(minute):
    return "%02d:%02d" % (minute // 60, minute % 60)


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    t = [minute_of(r[0]) for r in body]
    cols = {header[k]: [float(r[k]) for r in body] for k in range(1, len(header))}
    return t, cols


def robust_sd(v):
    m = statistics.median(v)
    return 1.4826 * statistics.median([abs(x - m) for x in v])


def line_fit(t, y, idx):
    """Least-squares line a + b (t - t0) over the minutes idx; returns a callable."""
    x = [t[i] for i in idx]
    v = [y[i] for i in idx]
    x0 = sum(x) / len(x)
    my = sum(v) / len(v)
    sxx = sum((a - x0) ** 2 for a in x)
    b = sum((a - x0) * (c - my) for a, c in zip(x, v)) / sxx if sxx > 0 else 0.0
    return (lambda tt: my + b * (tt - x0)), b


def fit_span(t, y, span):
    """Linear detrend with dips left out (iterated). Returns the fit of one series on one span."""
    lo, hi = minute_of(span[0]), minute_of(span[1])
    idx = [i for i, m in enumerate(t) if lo <= m <= hi]
    keep = list(idx)
    dips = []
    for _ in range(20):
        line, slope = line_fit(t, y, keep)
        res = {i: y[i] - line(t[i]) for i in idx}
        s = robust_sd([res[i] for i in keep])
        dips = [i for i in idx if res[i] < -max(DIP_ROBUST_Z * s, DIP_MIN_FRAC * line(t[i]))]
        near = set(dips) | {i - 1 for i in dips} | {i + 1 for i in dips}
        new_keep = [i for i in idx if i not in near]
        if new_keep == keep:
            break
        keep = new_keep
    line, slope = line_fit(t, y, keep)
    r = [y[i] - line(t[i]) for i in keep]
    level = sum(y[i] for i in keep) / len(keep)
    sd = statistics.pstdev(r)
    kset = set(keep)
    pairs = [(y[i] - line(t[i]), y[i + 1] - line(t[i + 1])) for i in keep if i + 1 in kset]
    r1 = sum(a * b for a, b in pairs) / len(pairs) / (sd * sd) if sd > 0 else 0.0
    # Dip events: runs of dip minutes; lost energy over the run and one minute either side.
    events = []
    for i in sorted(dips):
        if events and i <= events[-1][-1] + 1:
            events[-1].append(i)
        else:
            events.append([i])
    dip_out = []
    for ev in events:
        span_i = [j for j in range(ev[0] - 1, ev[-1] + 2) if j in set(idx)]
        lost = MINUTE_S * sum(1 - y[j] / line(t[j]) for j in span_i)
        deepest = min(y[j] / line(t[j]) for j in ev)
        dip_out.append({"minute": hhmm(t[ev[0]]), "t_min": t[ev[0]], "lost_s": lost,
                        "deepest_frac": deepest})
    return {
        "span": "%s-%s" % span,
        "minutes": len(idx),
        "minutes_used": len(keep),
        "level_w": level,
        "slope_w_per_h": slope * 60,
        "sd_w": sd,
        "sd_frac": sd / level,
        "lag1_corr": r1,
        "lag1_pairs": len(pairs),
        "resid": {i: y[i] - line(t[i]) for i in keep},
        "dips": dip_out,
    }


def ar1_minute_lag1(tau_s, T=MINUTE_S):
    """Lag-one correlation of adjacent T-second means of a continuous AR(1) of time constant
    tau_s (the plant's noise, sampled finely)."""
    q = tau_s / T
    e = 1 - math.exp(-1 / q)
    return q * e * e / (2 * (1 - q * e))


def tau_for_lag1(r1):
    """Inverse of ar1_minute_lag1 (bisection on log tau); None for r1 <= 0."""
    if r1 <= 0:
        return None
    lo, hi = 1e-3, 1e6
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if ar1_minute_lag1(mid) < r1:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def projection_moves(data_dir, t0):
    """Minutes at which the field's projection (aps_projection_w.csv) changes: the control's
    moves during the event."""
    with open(os.path.join(data_dir, "aps_projection_w.csv"), newline="") as f:
        rows = list(csv.reader(f))[1:]
    out, last = [], None
    for r in rows:
        v = float(r[1])
        if last is not None and v != last:
            out.append(minute_of(r[0]))
        last = v
    return [m for m in out if m >= t0]


def whole_record_dips(t, y, moves):
    """Dips over the whole record against a +-7-minute running median (the first minute of each
    run of dip minutes), none within MOVE_GUARD_MIN of a move of the projection (control, not
    the job); and the paused minutes (under 5 % of that median)."""
    dips, paused = [], []
    for i in range(len(y)):
        w = [y[j] for j in range(max(0, i - 7), min(len(y), i + 8)) if j != i]
        med = statistics.median(w)
        if med <= 0 or y[i] < PAUSE_FRAC * med:
            paused.append(t[i])
        elif any(abs(t[i] - m) <= MOVE_GUARD_MIN for m in moves):
            continue
        elif y[i] < (1 - PERIOD_DIP_FRAC) * med:
            dips.append(t[i])
    firsts = [m for k, m in enumerate(dips) if k == 0 or m > dips[k - 1] + 1]
    return firsts, paused


def dip_spacings(t, y, moves):
    """Spacings (minutes) of one job's consecutive dips with no pause of the job between them (a
    restart begins a new cycle); a dip hidden in a guarded minute shows as a double spacing,
    which the median leaves out."""
    firsts, paused = whole_record_dips(t, y, moves)
    out = []
    for a, b in zip(firsts, firsts[1:]):
        if any(a <= m <= b for m in paused):
            continue
        out.append(b - a)
    return firsts, paused, out


def fit(data_dir):
    t, cols = read_csv(os.path.join(data_dir, "aps_job_power_w.csv"))
    tc, cc = read_csv(os.path.join(data_dir, "caiso_reenactment_total_w.csv"))
    total_name = [k for k in cols if k.startswith("total")][0]
    jobs = [k for k in cols if k != total_name]
    out = {"data_dir": data_dir, "spans": {"aps": [APS_PRE, APS_POST],
                                          "caiso": [CAISO_PRE, CAISO_POST]},
           "method": "linear detrend per span (dip minutes and their neighbours left out, "
                     "iterated); sd of the residual 1-minute means / the span's level",
           "jobs": {}, "site": {}}
    fits = {}
    for name in jobs + [total_name]:
        fits[name] = [fit_span(t, cols[name], sp) for sp in (APS_PRE, APS_POST)]
    for name in jobs:
        out["jobs"][name] = [{k: v for k, v in f.items() if k != "resid"} for f in fits[name]]
    out["site"]["aps"] = [{k: v for k, v in f.items() if k != "resid"} for f in fits[total_name]]
    cfits = [fit_span(tc, cc["total"], sp) for sp in (CAISO_PRE, CAISO_POST)]
    out["site"]["caiso"] = [{k: v for k, v in f.items() if k != "resid"} for f in cfits]

    # Independence: on the minutes every series keeps, refit each line and compare the site's
    # residual variance with the jobs' summed.
    corr = []
    for s, sp in enumerate((APS_PRE, APS_POST)):
        common = set(fits[total_name][s]["resid"])
        for name in jobs:
            common &= set(fits[name][s]["resid"])
        common = sorted(common)
        resid = {}
        for name in jobs + [total_name]:
            line, _ = line_fit(t, cols[name], common)
            resid[name] = [cols[name][i] - line(t[i]) for i in common]
        v_site = statistics.pvariance(resid[total_name])
        v_jobs = sum(statistics.pvariance(resid[n]) for n in jobs)
        level = sum(cols[total_name][i] for i in common) / len(common)
        pair_r = []
        for a in range(len(jobs)):
            for b in range(a + 1, len(jobs)):
                x, z = resid[jobs[a]], resid[jobs[b]]
                sx, sz = statistics.pstdev(x), statistics.pstdev(z)
                pair_r.append(sum(p * q for p, q in zip(x, z)) / len(x) / (sx * sz))
        common_var = max(0.0, v_site - v_jobs)
        corr.append({"span": "%s-%s" % sp, "minutes": len(common),
                     "site_sd_frac": math.sqrt(v_site) / level,
                     "independent_sd_frac": math.sqrt(v_jobs) / level,
                     "variance_ratio": v_site / v_jobs,
                     "common_sd_frac": math.sqrt(common_var) / level,
                     "mean_pair_corr": sum(pair_r) / len(pair_r),
                     "pair_corr_range": [min(pair_r), max(pair_r)]})
    out["independence"] = corr

    # noise_frac_1min: sqrt(sum (f_j L_j)^2 / sum L_j^2), each span, then the mean of the two
    # spans' variances.
    feq2 = []
    for s in range(2):
        num = sum((fits[n][s]["sd_frac"] * fits[n][s]["level_w"]) ** 2 for n in jobs)
        den = sum(fits[n][s]["level_w"] ** 2 for n in jobs)
        feq2.append(num / den)
    noise_frac = math.sqrt(sum(feq2) / len(feq2))
    # Per job, pooled over the two spans (root mean square of the fractions).
    per_job = {n: math.sqrt(sum(f["sd_frac"] ** 2 for f in fits[n]) / 2) for n in jobs}
    # Site sd the model gives for the APS jobs with their per-job fits: independent sum.
    lv = {n: sum(f["level_w"] for f in fits[n]) / 2 for n in jobs}
    site_model = math.sqrt(sum((per_job[n] * lv[n]) ** 2 for n in jobs)) / sum(lv.values())
    site_meas = math.sqrt(sum(f["sd_frac"] ** 2 for f in fits[total_name]) / 2)

    # tau: the jobs' lag-one correlations pooled (pairs-weighted), and the largest 95 % upper
    # bound of one job's span (r1 + 1.96 / sqrt(pairs)) mapped through the AR(1) minute-mean
    # relation: every job's noise has a correlation time under that.
    n_pairs = sum(f["lag1_pairs"] for n in jobs for f in fits[n])
    r1_pool = sum(f["lag1_corr"] * f["lag1_pairs"] for n in jobs for f in fits[n]) / n_pairs
    r1_hi = max(f["lag1_corr"] + 1.96 / math.sqrt(f["lag1_pairs"]) for n in jobs for f in fits[n])
    tau_hi = tau_for_lag1(r1_hi)

    # Dips: period from the whole record; level and duration from the outside-event dips of the
    # jobs that dip.
    periods, dip_rows = [], []
    moves = projection_moves(data_dir, t[0])
    out["projection_moves"] = [hhmm(m) for m in moves]
    for n in jobs:
        firsts, paused, sp = dip_spacings(t, cols[n], moves)
        periods += sp
        for s, f in enumerate(fits[n]):
            for d in f["dips"]:
                dip_rows.append({"job": n, "span": f["span"], **d})
        out["jobs"][n].append({"whole_record_dips": [hhmm(m) for m in firsts],
                               "paused_minutes": len(paused),
                               "spacings_min": sp})
    dipping = sorted({d["job"] for d in dip_rows})
    level = min(d["deepest_frac"] for d in dip_rows) if dip_rows else None
    durations = [d["lost_s"] / (1 - level) for d in dip_rows] if dip_rows else []
    caiso_dips = [{"span": f["span"], **d} for f in cfits for d in f["dips"]]
    caiso_firsts, _ = whole_record_dips(tc, cc["total"], [])
    out["dips"] = {
        "outside_events": dip_rows,
        "jobs_with_dips": dipping,
        "jobs_without_dips": [n for n in jobs if n not in dipping],
        "spacings_min": periods,
        "caiso_total_dips": caiso_dips,
        "caiso_total_whole_record": [hhmm(m) for m in caiso_firsts],
    }
    period_s = statistics.median(periods) * MINUTE_S if periods else None
    duration_s = statistics.median(durations) if durations else None
    per_job_dips = {}
    for n in dipping:
        rows = [d for d in dip_rows if d["job"] == n]
        lost = statistics.mean(d["lost_s"] for d in rows)
        first = min(d["t_min"] for d in rows)
        per_job_dips[n] = {"lost_s": lost, "duration_s": lost / (1 - level),
                           "first_dip_s": (first - t[0]) * MINUTE_S}
    out["fit"] = {
        "site_sd_frac_aps": site_meas,
        "site_sd_frac_model": site_model,
        "site_sd_frac_caiso": [f["sd_frac"] for f in cfits],
        "noise_frac_1min": noise_frac,
        "per_job_noise_frac_1min": per_job,
        "lag1_pooled": r1_pool,
        "lag1_pairs": n_pairs,
        "lag1_upper95": r1_hi,
        "tau_upper95_s": tau_hi,
        "noise_tau_s": TAU_KEPT_S,
        "site_common_sd_frac": max(c["common_sd_frac"] for c in corr)
        if all(c["variance_ratio"] > 1.2 for c in corr) else 0.0,
        "dip_period_s": period_s,
        "dip_level": level,
        "dip_duration_s": duration_s,
        "per_job_dips": per_job_dips,
    }
    # The values the C++ defaults carry, rounded as written there.
    out["defaults"] = {
        "noise_frac_1min": round(noise_frac, 4),
        "noise_tau_s": TAU_KEPT_S,
        "site_common_sd_frac": round(out["fit"]["site_common_sd_frac"], 4),
        "dip_period_s": round(period_s) if period_s else 0,
        "dip_duration_s": round(duration_s) if duration_s else 0,
        "dip_level": round(level, 2) if level is not None else 0,
    }
    out["per_job_defaults"] = {
        n: {"noise_frac_1min": round(per_job[n], 4),
            **({"dip_duration_s": round(per_job_dips[n]["duration_s"]),
                "dip_phase_s": round(per_job_dips[n]["first_dip_s"])} if n in per_job_dips
               else {})}
        for n in jobs}
    return out


def pct(x):
    return "%.3f %%" % (100 * x)


def report(out):
    p = print
    p("fit_dr_noise: field data %s" % out["data_dir"])
    p("method: %s" % out["method"])
    p("spans: APS pre %s-%s, post %s-%s; CAISO pre %s-%s, post %s-%s"
      % (APS_PRE + APS_POST + CAISO_PRE + CAISO_POST))
    p("")
    p("%-26s %-11s %4s %9s %9s %9s %7s %s" % ("series", "span", "min", "level W", "slope W/h",
                                              "sd 1-min", "lag1", "dips (minute: lost s, "
                                              "deepest)"))
    rows = [(n, f) for n, fs in out["jobs"].items() for f in fs if "level_w" in f]
    rows += [("total (APS)", f) for f in out["site"]["aps"]]
    rows += [("total (CAISO)", f) for f in out["site"]["caiso"]]
    for n, f in rows:
        d = ", ".join("%s: %.0f s, %.2f" % (x["minute"], x["lost_s"], x["deepest_frac"])
                      for x in f["dips"])
        p("%-26s %-11s %4d %9.0f %9.1f %9s %+7.2f %s" % (n[:26], f["span"], f["minutes_used"],
                                                      f["level_w"], f["slope_w_per_h"],
                                                      pct(f["sd_frac"]), f["lag1_corr"], d))
    p("")
    p("jobs' noises (APS, minutes every series keeps):")
    for c in out["independence"]:
        p("  %s: site sd %s, jobs combined as independent %s, variance ratio %.2f, "
          "common component %s; pairwise correlation mean %+.2f (%+.2f..%+.2f)"
          % (c["span"], pct(c["site_sd_frac"]), pct(c["independent_sd_frac"]),
             c["variance_ratio"], pct(c["common_sd_frac"]), c["mean_pair_corr"],
             c["pair_corr_range"][0], c["pair_corr_range"][1]))
    f = out["fit"]
    p("")
    p("whole-record dips (period; against a +-7-minute running median, none within %d minutes "
      "of the projection's moves %s):" % (MOVE_GUARD_MIN, " ".join(out["projection_moves"])))
    for n, fs in out["jobs"].items():
        w = fs[-1]
        p("  %-26s %s; spacings without a pause between: %s min"
          % (n[:26], " ".join(w["whole_record_dips"]) or "none",
             ", ".join(str(x) for x in w["spacings_min"]) or "none"))
    p("  CAISO total, whole record (no pause or projection data: steps show too): %s"
      % " ".join(out["dips"]["caiso_total_whole_record"]))
    p("  CAISO total, outside the events: %s" % ", ".join(
        "%s (%.0f s, %.2f)" % (d["minute"], d["lost_s"], d["deepest_frac"])
        for d in out["dips"]["caiso_total_dips"]))
    p("")
    p("fit:")
    p("  site sd of 1-minute means (APS, both spans): %s; the jobs' fits combined as "
      "independent: %s; CAISO total: %s" % (pct(f["site_sd_frac_aps"]),
                                            pct(f["site_sd_frac_model"]),
                                            ", ".join(pct(x) for x in f["site_sd_frac_caiso"])))
    p("  per-job noise_frac_1min (rms of the two spans): " + ", ".join(
        "%s %s" % (n, pct(v)) for n, v in f["per_job_noise_frac_1min"].items()))
    p("  noise_frac_1min (default; sqrt(sum (f L)^2 / sum L^2), both spans): %.4f"
      % f["noise_frac_1min"])
    p("  site-common component: %s (%s)" % (
        pct(f["site_common_sd_frac"]),
        "none: the site's variance is within the jobs' independent sum"
        if f["site_common_sd_frac"] == 0 else "the site's excess over the jobs' sum"))
    tau = f["tau_upper95_s"]
    p("  lag-one correlation of the jobs' residual minutes: %+.3f pooled (%d pairs; an AR(1) "
      "gives %+.3f at tau %.0f s), largest 95 %% upper bound of one job's span %+.3f -> "
      "noise_tau_s < %s; not identifiable below that: kept %.0f s (assumption)"
      % (f["lag1_pooled"], f["lag1_pairs"], ar1_minute_lag1(f["noise_tau_s"]),
         f["noise_tau_s"], f["lag1_upper95"], "%.0f s" % tau if tau else "any",
         f["noise_tau_s"]))
    p("  dips: period %.0f s (median of %d spacings), level <= %.2f (the lowest deepest minute; "
      "the level itself is not identifiable from 1-minute means), duration %.0f s at that level "
      "(median lost energy / (1 - level)); jobs with dips: %s; without: %s"
      % (f["dip_period_s"] or 0, len(out["dips"]["spacings_min"]), f["dip_level"] or 0,
         f["dip_duration_s"] or 0, ", ".join(out["dips"]["jobs_with_dips"]),
         ", ".join(out["dips"]["jobs_without_dips"])))
    p("")
    d = out["defaults"]
    p("defaults (src/studies/dr_event.hpp): noise_frac_1min %.4f, noise_tau_s %.0f, "
      "site_common_sd_frac %.4f, dips period_s %d, duration_s %d, level %.2f"
      % (d["noise_frac_1min"], d["noise_tau_s"], d["site_common_sd_frac"], d["dip_period_s"],
         d["dip_duration_s"], d["dip_level"]))
    for n, v in out["per_job_defaults"].items():
        extra = (", dips duration_s %d, first at %d s" % (v["dip_duration_s"], v["dip_phase_s"])
                 if "dip_duration_s" in v else ", no dips")
        p("per job %s: noise_frac_1min %.4f%s" % (n, v["noise_frac_1min"], extra))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=os.path.join(here, "..", "data", "emerald-phoenix"),
                    help="folder with aps_job_power_w.csv and caiso_reenactment_total_w.csv "
                         "(default: the repository's data/emerald-phoenix/)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the text")
    a = ap.parse_args()
    try:
        out = fit(os.path.normpath(a.data_dir))
    except (OSError, ValueError, KeyError, IndexError) as e:
        print("fit_dr_noise: %s" % e, file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(out, indent=1, sort_keys=True))
    else:
        report(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
