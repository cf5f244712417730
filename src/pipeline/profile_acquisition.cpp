#include "pipeline/profile_acquisition.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>

#include "core/format.hpp"

namespace fw::pipeline {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool same_cap(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::abs(a - b) <= tol;
}

// Energy between rows i and j (i < j) of one GPU: its counter, else trapezoids of power.
double energy_between(const std::vector<const GpuSample*>& g, size_t i, size_t j) {
  if (std::isfinite(g[i]->energy_j) && std::isfinite(g[j]->energy_j) &&
      g[j]->energy_j >= g[i]->energy_j) {
    return g[j]->energy_j - g[i]->energy_j;
  }
  double e = 0;
  for (size_t k = i; k < j; ++k) {
    const double p0 = g[k]->power_w, p1 = g[k + 1]->power_w;
    if (!std::isfinite(p0) || !std::isfinite(p1)) return kNaN;
    e += 0.5 * (p0 + p1) * (g[k + 1]->time_s - g[k]->time_s);
  }
  return e;
}

// A measurement of one rank in one cap window.
struct Window {
  int stage = 0;
  double cap_w = 0;
  double freq_mhz = 0, t[2] = {0, 0}, compute_w = 0;
  int ops = 0;
  double span_s = 0;
};

// Accumulates points weighted by ops.
struct Acc {
  double w = 0, f = 0, t0 = 0, t1 = 0, p = 0, span = 0;
  int ops = 0, windows = 0;
  double cap_w = kNaN;
  void add(const Window& x) {
    const double k = x.ops;
    w += k;
    f += k * x.freq_mhz;
    t0 += k * x.t[0];
    t1 += k * x.t[1];
    p += k * x.compute_w;
    ops += x.ops;
    windows += 1;
    span += x.span_s;
  }
  void add(const Acc& o) {
    w += o.w;
    f += o.f;
    t0 += o.t0;
    t1 += o.t1;
    p += o.p;
    ops += o.ops;
    windows += o.windows;
    span += o.span;
  }
};

}  // namespace

Result<AcquiredProfile> acquire_profile(const std::vector<RankTimings>& ranks,
                                        const std::vector<GpuSample>& samples,
                                        const AcquisitionOptions& opt) {
  if (!(opt.blocking_w > 0)) return Status::InvalidArgument("blocking power must be > 0");
  if (ranks.empty()) return Status::InvalidArgument("no ranks' timings");
  const int S = ranks.front().stages;
  std::vector<int> ranks_of_stage(S, 0);
  for (const auto& r : ranks) {
    if (r.stages != S) {
      return Status::InvalidArgument(r.source + ":1: stages: " + std::to_string(r.stages) +
                                     " but another rank says " + std::to_string(S));
    }
    ++ranks_of_stage[r.stage];
  }
  for (int s = 0; s < S; ++s) {
    if (!ranks_of_stage[s]) {
      return Status::InvalidArgument("stage " + std::to_string(s) + " of " + std::to_string(S) +
                                     ": no rank's timings (give one file per rank, every stage)");
    }
  }
  std::map<int, std::vector<const GpuSample*>> by_gpu;
  for (const auto& x : samples) by_gpu[x.gpu].push_back(&x);
  for (auto& [gpu, v] : by_gpu) {
    std::stable_sort(v.begin(), v.end(),
                     [](const GpuSample* a, const GpuSample* b) { return a->time_s < b->time_s; });
  }
  AcquiredProfile out;
  // Key: (stage, cap rounded to 0.5 W; NaN caps map to -1).
  std::map<std::pair<int, double>, Acc> acc;
  for (const auto& r : ranks) {
    const std::string who =
        r.source + " (stage " + std::to_string(r.stage) + ", gpu " + std::to_string(r.gpu) + ")";
    if (r.ops.empty()) {
      out.notes.push_back(who + ": no ops");
      continue;
    }
    auto it = by_gpu.find(r.gpu);
    double t_lo = 1e300, t_hi = -1e300;
    for (const auto& op : r.ops) {
      t_lo = std::min(t_lo, op.start_unix_s);
      t_hi = std::max(t_hi, op.end_unix_s);
    }
    std::vector<const GpuSample*> g;
    if (it != by_gpu.end()) {
      for (const GpuSample* x : it->second) {
        const double t = x->time_s + opt.trace_offset_s;
        if (t >= t_lo - 1 && t <= t_hi + 1) g.push_back(x);
      }
    }
    if (g.size() < 2) {
      return Status::InvalidArgument(
          who + ": the trace has no rows of gpu " + std::to_string(r.gpu) +
          " while this rank ran (check --trace and the trace's start time, --trace-start-unix-s)");
    }
    // Ops sorted by start for the overlap sums.
    std::vector<OpTiming> ops = r.ops;
    std::sort(ops.begin(), ops.end(),
              [](const OpTiming& a, const OpTiming& b) { return a.start_unix_s < b.start_unix_s; });
    size_t i0 = 0;
    while (i0 < g.size()) {
      size_t i1 = i0;
      while (i1 + 1 < g.size() && same_cap(g[i1 + 1]->cap_w, g[i0]->cap_w, opt.cap_tol_w)) ++i1;
      const double cap = g[i0]->cap_w;
      const double t_set = g[i0]->time_s + opt.trace_offset_s;
      size_t a = i0;
      while (a < i1 && g[a]->time_s + opt.trace_offset_s < t_set + opt.settle_s) ++a;
      const size_t b = i1;
      const double ta = g[a]->time_s + opt.trace_offset_s, tb = g[b]->time_s + opt.trace_offset_s;
      const std::string wname =
          who + strprintf(" window at cap %s W, %.1f-%.1f s",
                          std::isnan(cap) ? "?" : strprintf("%.1f", cap).c_str(), g[i0]->time_s,
                          g[i1]->time_s);
      i0 = i1 + 1;
      if (b <= a || tb - ta < opt.min_window_s) {
        out.notes.push_back(wname + ": shorter than " + strprintf("%g", opt.min_window_s) +
                            " s after settling; skipped");
        continue;
      }
      std::vector<double> d[2];
      double busy = 0;
      for (const auto& op : ops) {
        if (op.end_unix_s <= ta) continue;
        if (op.start_unix_s >= tb) break;
        busy += std::min(op.end_unix_s, tb) - std::max(op.start_unix_s, ta);
        if (op.start_unix_s >= ta && op.end_unix_s <= tb) {
          d[static_cast<int>(op.instr)].push_back(op.end_unix_s - op.start_unix_s);
        }
      }
      if (d[0].empty() || d[1].empty()) {
        out.notes.push_back(wname + ": no whole forward and backward in it; skipped");
        continue;
      }
      const double e = energy_between(g, a, b);
      std::vector<double> clocks;
      for (size_t k = a; k <= b; ++k) {
        if (std::isfinite(g[k]->sm_clock_mhz)) clocks.push_back(g[k]->sm_clock_mhz);
      }
      const double span = tb - ta;
      const double p = (e - opt.blocking_w * (span - busy)) / busy;
      if (!std::isfinite(e) || clocks.empty() || !(busy > 0) || !(p > 0)) {
        out.notes.push_back(wname +
                            (clocks.empty() ? ": no SM clock in the trace"
                                            : ": no energy or power while computing") +
                            "; skipped");
        continue;
      }
      Window w;
      w.stage = r.stage;
      w.cap_w = cap;
      w.freq_mhz = std::round(median(clocks));
      w.t[0] = median(d[0]);
      w.t[1] = median(d[1]);
      w.compute_w = p;
      w.ops = static_cast<int>(d[0].size() + d[1].size());
      w.span_s = span;
      const double key = std::isnan(cap) ? -1 : std::round(cap * 2) / 2;
      Acc& x = acc[{r.stage, key}];
      x.cap_w = cap;
      x.add(w);
    }
  }
  // Per stage: merge points whose clocks round to one MHz.
  std::vector<std::map<double, Acc, std::greater<>>> per_stage(S);
  for (const auto& [key, x] : acc) {
    const double f = std::round(x.f / x.w);
    auto& slot = per_stage[key.first][f];
    if (slot.windows && !same_cap(slot.cap_w, x.cap_w, opt.cap_tol_w))
      slot.cap_w = std::max(slot.cap_w, x.cap_w);
    if (!slot.windows) slot.cap_w = x.cap_w;
    slot.add(x);
  }
  std::vector<ProfileRow> rows;
  for (int s = 0; s < S; ++s) {
    if (per_stage[s].empty()) {
      return Status::InvalidArgument("stage " + std::to_string(s) + ": no window gave a point (" +
                                     std::to_string(out.notes.size()) +
                                     " skipped; run longer "
                                     "at each cap, or check the trace covers the job)");
    }
    std::vector<MeasuredPoint> pts;
    for (const auto& [f, x] : per_stage[s]) {
      MeasuredPoint m;
      m.stage = s;
      m.cap_w = x.cap_w;
      m.freq_mhz = f;
      m.forward_s = x.t0 / x.w;
      m.backward_s = x.t1 / x.w;
      m.compute_w = x.p / x.w;
      m.ops = x.ops;
      m.windows = x.windows;
      m.measured_s = x.span;
      pts.push_back(m);
    }
    out.measured.insert(out.measured.end(), pts.begin(), pts.end());
    auto emit = [&](double f, double tf, double tb, double p) {
      rows.push_back({s, Instr::kForward, f, tf, p * tf});
      rows.push_back({s, Instr::kBackward, f, tb, p * tb});
    };
    for (size_t k = 0; k < pts.size(); ++k) {
      const MeasuredPoint& hi = pts[k];
      emit(hi.freq_mhz, hi.forward_s, hi.backward_s, hi.compute_w);
      if (!(opt.resample_mhz > 0) || k + 1 == pts.size()) continue;
      const MeasuredPoint& lo = pts[k + 1];
      // Grid points strictly between hi and lo: top − j·step.
      const double top = pts.front().freq_mhz;
      for (double j = std::floor((top - hi.freq_mhz) / opt.resample_mhz) + 1;; j += 1) {
        const double f = top - j * opt.resample_mhz;
        if (f >= hi.freq_mhz) continue;
        if (f <= lo.freq_mhz + 0.5) break;
        const double u = (1 / f - 1 / hi.freq_mhz) / (1 / lo.freq_mhz - 1 / hi.freq_mhz);
        const double v = (hi.freq_mhz - f) / (hi.freq_mhz - lo.freq_mhz);
        emit(f, hi.forward_s + u * (lo.forward_s - hi.forward_s),
             hi.backward_s + u * (lo.backward_s - hi.backward_s),
             hi.compute_w + v * (lo.compute_w - hi.compute_w));
      }
    }
  }
  FW_ASSIGN_OR_RETURN(out.profile, make_stage_profile(rows, "acquired profile"));
  return out;
}

Status write_stage_profile(const std::string& path, const StageProfile& p) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Status::InvalidArgument(path + ": cannot write");
  out << "stage,instruction,frequency,time,energy\n";
  for (int s = 0; s < p.num_stages(); ++s) {
    for (int k = 0; k < 2; ++k) {
      for (const auto& pt : p.stages[s][k].points) {
        out << strprintf("%d,%s,%.6g,%.9g,%.9g\n", s, k == 0 ? "forward" : "backward", pt.freq_mhz,
                         pt.time_s, pt.energy_j);
      }
    }
  }
  out.flush();
  if (!out) return Status::InvalidArgument(path + ": write failed");
  return Status::Ok();
}

std::vector<double> default_probe_caps(double min_cap_w, double max_cap_w, int n) {
  std::vector<double> caps;
  for (int i = 1; i <= n; ++i) {
    caps.push_back(std::round(max_cap_w - (max_cap_w - min_cap_w) * i / n));
  }
  return caps;
}

Result<ProbePlan> make_probe_plan(const ProbeOptions& opt) {
  if (!(opt.max_cap_w > 0) || !(opt.blocking_w > 0) || !(opt.settle_s >= 0) ||
      !(opt.measure_s > 0)) {
    return Status::InvalidArgument(
        "probe plan: needs the GPU's maximum cap, a blocking power, "
        "settle_s >= 0 and measure_s > 0");
  }
  std::vector<double> caps = opt.caps_w;
  for (double c : caps) {
    if (!(c > 0) || c > opt.max_cap_w) {
      return Status::InvalidArgument(
          strprintf("--probe-caps: %g W is outside (0, %g] W, the GPU's range", c, opt.max_cap_w));
    }
  }
  std::sort(caps.begin(), caps.end(), std::greater<>());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  ProbePlan p;
  p.busy_w = opt.busy_w > 0 ? opt.busy_w : opt.max_cap_w;
  p.blocking_w = opt.blocking_w;
  const double dwell = opt.settle_s + opt.measure_s;
  double t = 0, speed_time = 0, probe_time = 0;
  p.steps.push_back({0, opt.max_cap_w, dwell, 1});
  t += dwell;
  for (double c : caps) {
    if (c >= opt.max_cap_w) continue;  // the baseline
    const double span = p.busy_w - p.blocking_w;
    const double speed = span > 0 ? std::clamp((c - p.blocking_w) / span, 0.05, 1.0) : 1.0;
    p.steps.push_back({t, c, dwell, speed});
    t += dwell;
    probe_time += dwell;
    speed_time += dwell * speed;
    p.lost_s += dwell * (1 - speed);
  }
  p.total_s = t;
  p.mean_speed_est = probe_time > 0 ? speed_time / probe_time : 1;
  return p;
}

std::string format_probe_plan(const ProbePlan& p) {
  std::string s = strprintf(
      "probe plan: %zu cap levels after a baseline window, every GPU of the job at one cap at a "
      "time, %.0f s each (settling + measuring), then the maximum cap put back\n",
      p.steps.size() - 1, p.steps.empty() ? 0.0 : p.steps.front().dwell_s);
  s += "  start_s  cap_w  dwell_s  throughput (est.)\n";
  for (const auto& st : p.steps) {
    s += strprintf("  %7.0f  %5.0f  %7.0f  %5.1f %%%s\n", st.start_s, st.cap_w, st.dwell_s,
                   100 * st.speed_est, st.start_s == 0 ? "  (baseline)" : "");
  }
  s += strprintf(
      "cost: %.1f min in all, %.1f min at lowered caps with throughput %.1f %% of uncapped "
      "(estimated: clock falls in proportion to power above %.1f W from %.1f W while computing); "
      "about %.1f min of training time lost\n",
      p.total_s / 60, (p.total_s - (p.steps.empty() ? 0 : p.steps.front().dwell_s)) / 60,
      100 * p.mean_speed_est, p.blocking_w, p.busy_w, p.lost_s / 60);
  return s;
}

nlohmann::json probe_plan_json(const ProbePlan& p) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& st : p.steps) {
    steps.push_back({{"start_s", st.start_s},
                     {"cap_w", st.cap_w},
                     {"dwell_s", st.dwell_s},
                     {"throughput_est", st.speed_est}});
  }
  return {{"steps", steps},
          {"total_min", p.total_s / 60},
          {"throughput_while_probing_est", p.mean_speed_est},
          {"training_lost_min_est", p.lost_s / 60},
          {"compute_w", p.busy_w},
          {"blocking_w", p.blocking_w}};
}

int fewest_clocks(const AcquiredProfile& a) {
  std::map<int, int> n;
  for (const auto& m : a.measured) ++n[m.stage];
  int lo = 1 << 30;
  for (int s = 0; s < a.profile.num_stages(); ++s) lo = std::min(lo, n[s]);
  return a.profile.num_stages() ? lo : 0;
}

double top_compute_w(const AcquiredProfile& a) {
  double w = 0;
  std::map<int, bool> seen;
  for (const auto& m : a.measured) {  // by stage, highest clock first
    if (!seen[m.stage]) w = std::max(w, m.compute_w);
    seen[m.stage] = true;
  }
  return w;
}

std::string format_acquisition(const AcquiredProfile& a) {
  std::string s =
      "measured points (per stage, highest clock first; compute power from the "
      "energy counter less blocking):\n"
      "  stage  cap_w  clock_mhz  forward_s  backward_s  compute_w   ops  windows\n";
  for (const auto& m : a.measured) {
    s += strprintf("  %5d  %5s  %9.0f  %9.5f  %10.5f  %9.1f  %4d  %7d\n", m.stage,
                   std::isnan(m.cap_w) ? "?" : strprintf("%.0f", m.cap_w).c_str(), m.freq_mhz,
                   m.forward_s, m.backward_s, m.compute_w, m.ops, m.windows);
  }
  int rows = 0;
  for (const auto& st : a.profile.stages) rows += static_cast<int>(st[0].points.size());
  s += strprintf("profile: %d stages, %d clocks in all (measured and interpolated)\n",
                 a.profile.num_stages(), rows);
  for (const auto& n : a.notes) s += "note: " + n + "\n";
  return s;
}

nlohmann::json acquisition_json(const AcquiredProfile& a) {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& m : a.measured) {
    pts.push_back(
        {{"stage", m.stage},
         {"cap_w", std::isnan(m.cap_w) ? nlohmann::json(nullptr) : nlohmann::json(m.cap_w)},
         {"clock_mhz", m.freq_mhz},
         {"forward_s", m.forward_s},
         {"backward_s", m.backward_s},
         {"compute_w", m.compute_w},
         {"ops", m.ops},
         {"windows", m.windows},
         {"measured_s", m.measured_s}});
  }
  int rows = 0;
  for (const auto& st : a.profile.stages) rows += static_cast<int>(st[0].points.size());
  return {{"stages", a.profile.num_stages()},
          {"profile_clocks", rows},
          {"fewest_measured_clocks", fewest_clocks(a)},
          {"measured", pts},
          {"notes", a.notes}};
}

}  // namespace fw::pipeline
