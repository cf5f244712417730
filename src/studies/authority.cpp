#include "studies/authority.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/windows.hpp"

namespace fw::studies {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string knob_name(Knob k) { return std::string(kKnobNames[static_cast<int>(k)]); }

// One run at one setting: figures over the job's GPUs.
Result<AuthorityPoint> run_one(Plant& plant, const AuthorityOptions& o, Knob knob, double value) {
  const PlantInfo& info = plant.info();
  const JobInfo& job = info.jobs[o.job];
  Command cmd;
  cmd.knobs.assign(info.jobs.size(), kNoKnobs);
  cmd.knobs[o.job][static_cast<int>(knob)] = value;
  FW_RETURN_IF_ERROR(plant.write(cmd));

  Snapshot snap;
  WindowAccumulator win(o.window_s, kInf);
  const double dt = o.sample_period_s;
  const auto n = static_cast<int64_t>(std::floor(o.duration_s / dt + 1e-9));
  double sum_w = 0, peak_w = -kInf, tokens0 = 0, t_first = 0, t_last = 0;
  int64_t used = 0;
  for (int64_t k = 1; k <= n; ++k) {
    const double t = static_cast<double>(k) * dt;
    FW_RETURN_IF_ERROR(plant.read(t, snap));
    if (static_cast<size_t>(o.job) >= snap.jobs.size()) {
      return Status::Internal("authority: the plant reported no job " + std::to_string(o.job));
    }
    if (t <= o.warmup_s + 1e-9) {
      tokens0 = snap.jobs[o.job].tokens_total;
      t_first = t;
      continue;
    }
    if (used == 0 && o.warmup_s <= 0) {
      // No warm-up: tokens and time count from t = 0 (the plant starts with no tokens).
      tokens0 = 0;
      t_first = 0;
    }
    double p = 0;
    for (int g : job.gpus) p += snap.gpus[g].power_w;
    sum_w += p;
    peak_w = std::max(peak_w, p);
    win.add(t - dt, p, dt);
    ++used;
    t_last = t;
  }
  if (used == 0) return Status::InvalidArgument("authority: no samples after the warm-up");
  AuthorityPoint pt;
  pt.value = value;
  pt.mean_power_w = sum_w / static_cast<double>(used);
  pt.peak_sample_w = peak_w;
  const WindowStats ws = win.finish();
  pt.peak_window_w = ws.windows > 0 ? ws.peak_mean_w : pt.mean_power_w;
  pt.tokens_per_s = (snap.jobs[o.job].tokens_total - tokens0) / (t_last - t_first);
  return pt;
}

double swing(const std::vector<AuthorityPoint>& pts, double AuthorityPoint::*f) {
  double lo = kInf, hi = -kInf;
  for (const auto& p : pts) {
    lo = std::min(lo, p.*f);
    hi = std::max(hi, p.*f);
  }
  const double at_max = pts.back().*f;
  return at_max > 0 ? (hi - lo) / at_max : std::nan("");
}

}  // namespace

std::vector<double> knob_settings(const KnobRange& r, int points) {
  std::vector<double> out;
  const double step = r.step > 0 ? r.step : 1;
  const int n = std::max(points, 2);
  for (int i = 0; i < n; ++i) {
    double v = r.min + (r.max - r.min) * static_cast<double>(i) / static_cast<double>(n - 1);
    v = r.min + std::round((v - r.min) / step) * step;
    v = std::clamp(v, r.min, r.max);
    if (out.empty() || v > out.back() + 1e-9) out.push_back(v);
  }
  if (out.back() < r.max - 1e-9) out.push_back(r.max);
  return out;
}

Status validate(const AuthorityOptions& o, const PlantInfo& info) {
  if (o.job < 0 || o.job >= static_cast<int>(info.jobs.size())) {
    return Status::InvalidArgument("--job: no job " + std::to_string(o.job) + " (the plant has " +
                                   std::to_string(info.jobs.size()) + ")");
  }
  const JobInfo& j = info.jobs[o.job];
  for (Knob k : o.knobs) {
    if (!j.knob_ranges[static_cast<int>(k)].available) {
      return Status::InvalidArgument("--knob: job '" + j.name + "' has no knob " + knob_name(k));
    }
  }
  bool any = false;
  for (const auto& r : j.knob_ranges) any = any || r.available;
  if (!any) return Status::InvalidArgument("job '" + j.name + "' exposes no workload knob");
  if (!(o.sample_period_s > 0)) return Status::InvalidArgument("sample period must be > 0");
  if (!(o.warmup_s >= 0)) return Status::InvalidArgument("--warmup-s: must be >= 0");
  if (!(o.duration_s > o.warmup_s + o.sample_period_s) || !std::isfinite(o.duration_s)) {
    return Status::InvalidArgument(
        "--duration-s: must exceed the warm-up by at least one sample period");
  }
  if (!(o.window_s > 0)) return Status::InvalidArgument("--window-s: must be > 0");
  if (o.points < 2) return Status::InvalidArgument("--points: must be >= 2");
  if (o.seeds < 1) return Status::InvalidArgument("--seeds: must be >= 1");
  if (!(o.threshold >= 0 && o.threshold <= 1)) {
    return Status::InvalidArgument("--threshold: must be in 0..1");
  }
  return Status::Ok();
}

Result<AuthorityReport> sweep_authority(const PlantFactory& make, const AuthorityOptions& opt,
                                        bool simulated) {
  std::unique_ptr<Plant> probe = make(opt.seed);
  if (!probe) return Status::Internal("authority: plant factory returned no plant");
  const PlantInfo info = probe->info();
  probe.reset();
  FW_RETURN_IF_ERROR(validate(opt, info));
  AuthorityReport rep;
  rep.simulated = simulated;
  rep.options = opt;
  rep.job = info.jobs[opt.job].name;
  rep.job_gpus = static_cast<int>(info.jobs[opt.job].gpus.size());
  std::vector<Knob> knobs = opt.knobs;
  if (knobs.empty()) {
    for (int k = 0; k < kNumKnobs; ++k) {
      if (info.jobs[opt.job].knob_ranges[k].available) knobs.push_back(static_cast<Knob>(k));
    }
  }
  for (Knob knob : knobs) {
    KnobAuthority ka;
    ka.knob = knob;
    for (double v :
         knob_settings(info.jobs[opt.job].knob_ranges[static_cast<int>(knob)], opt.points)) {
      AuthorityPoint mean_pt;
      mean_pt.value = v;
      for (int s = 0; s < opt.seeds; ++s) {
        std::unique_ptr<Plant> plant = make(opt.seed + static_cast<uint64_t>(s));
        if (!plant) return Status::Internal("authority: plant factory returned no plant");
        FW_ASSIGN_OR_RETURN(AuthorityPoint p, run_one(*plant, opt, knob, v));
        mean_pt.mean_power_w += p.mean_power_w / opt.seeds;
        mean_pt.peak_window_w += p.peak_window_w / opt.seeds;
        mean_pt.peak_sample_w += p.peak_sample_w / opt.seeds;
        mean_pt.tokens_per_s += p.tokens_per_s / opt.seeds;
      }
      ka.points.push_back(mean_pt);
    }
    ka.mean_swing = swing(ka.points, &AuthorityPoint::mean_power_w);
    ka.peak_window_swing = swing(ka.points, &AuthorityPoint::peak_window_w);
    ka.peak_sample_swing = swing(ka.points, &AuthorityPoint::peak_sample_w);
    double lo = kInf, hi = 0;
    for (const auto& p : ka.points) {
      lo = std::min(lo, p.tokens_per_s);
      hi = std::max(hi, p.tokens_per_s);
    }
    ka.throughput_ratio = lo > 0 ? hi / lo : std::nan("");
    ka.has_authority = ka.mean_swing >= opt.threshold;
    rep.knobs.push_back(std::move(ka));
  }
  std::stable_sort(
      rep.knobs.begin(), rep.knobs.end(),
      [](const KnobAuthority& a, const KnobAuthority& b) { return a.mean_swing > b.mean_swing; });
  for (size_t i = 0; i < rep.knobs.size(); ++i) rep.knobs[i].rank = static_cast<int>(i) + 1;
  return rep;
}

Result<AuthorityReport> sweep_authority(const sim::Scenario& s, const AuthorityOptions& o) {
  return sweep_authority([copy = s](uint64_t seed) { return sim::make_plant(copy, seed); }, o,
                         true);
}

}  // namespace fw::studies
