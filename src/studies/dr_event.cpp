#include "studies/dr_event.hpp"

#include <algorithm>
#include <filesystem>

#include "core/config.hpp"
#include "sim/fit.hpp"

namespace fw::studies {
namespace {

Result<DrDips> parse_dips(const ConfigNode& n) {
  DrDips d;
  if (auto none = n.as_string(); none.ok() && *none == "none") return d;  // period_s 0
  if (!n.is_map()) {
    return n.error("expected `none` or a map {period_s, phase_s, duration_s, level}");
  }
  FW_RETURN_IF_ERROR(n.reject_unknown({"period_s", "phase_s", "duration_s", "level"}));
  FW_ASSIGN_OR_RETURN(d.period_s, n.get_double("period_s", 0, 0, 1e7));
  FW_ASSIGN_OR_RETURN(d.phase_s, n.get_double("phase_s", 0, 0, 1e7));
  FW_ASSIGN_OR_RETURN(d.duration_s, n.get_double("duration_s", kDrFieldDipDurationS, 0, 1e6));
  FW_ASSIGN_OR_RETURN(d.level, n.get_double("level", kDrFieldDipLevel, 0, 1));
  if (d.period_s > 0 && d.duration_s >= d.period_s) {
    return n["duration_s"].error("must be shorter than period_s");
  }
  return d;
}

Result<DrJobSpec> parse_dr_job(const ConfigNode& n, size_t index, const std::string& base_dir) {
  if (!n.is_map()) return n.error("expected a map {name, gpus, sweep_csv, sweep_job, tier_min}");
  FW_RETURN_IF_ERROR(
      n.reject_unknown({"name", "gpus", "sweep_csv", "sweep_job", "tier_min", "pausable",
                        "baseline_w_per_gpu", "noise_frac_1min", "dips"}));
  DrJobSpec j;
  FW_ASSIGN_OR_RETURN(j.name, n.get_string("name", "job" + std::to_string(index)));
  if (!n.has("gpus")) return n.error("missing `gpus`");
  FW_ASSIGN_OR_RETURN(auto gpus, n.get_int("gpus", 0, 1, 1000000));
  j.gpus = static_cast<int>(gpus);
  if (!n.has("sweep_csv")) return n.error("missing `sweep_csv`");
  if (!n.has("sweep_job")) return n.error("missing `sweep_job`");
  FW_ASSIGN_OR_RETURN(j.sweep_csv, n.get_string("sweep_csv", ""));
  FW_ASSIGN_OR_RETURN(j.sweep_job, n.get_string("sweep_job", ""));
  if (!n.has("tier_min")) return n.error("missing `tier_min`");
  FW_ASSIGN_OR_RETURN(j.tier_min, n.get_double("tier_min", 0.5, 0, 1));
  FW_ASSIGN_OR_RETURN(j.pausable, n.get_bool("pausable", false));
  FW_ASSIGN_OR_RETURN(j.field_noise_frac_1min,
                      n.get_double("noise_frac_1min", kDrFieldNoiseFrac1min, 0, 0.5));
  if (n.has("dips")) {
    FW_ASSIGN_OR_RETURN(j.field_dips, parse_dips(n["dips"]));
  }
  std::string p = j.sweep_csv;
  if (!p.empty() && p[0] != '/') p = base_dir + "/" + p;
  // Only the job asked for: another job's rows are checked, not required to make a sweep.
  auto sweeps = sim::read_sweep_csv(p, j.sweep_job);
  if (!sweeps.ok()) return n["sweep_csv"].error(sweeps.status().message());
  const sim::MeasuredSweep* m = nullptr;
  for (const auto& s : *sweeps) {
    if (s.job == j.sweep_job) m = &s;
  }
  if (!m) return n["sweep_job"].error("no job '" + j.sweep_job + "' in " + p);
  const auto& top = m->points.back();
  FW_ASSIGN_OR_RETURN(double base_gpu, n.get_double("baseline_w_per_gpu", top.power_w, 1, 5000));
  const double scale = base_gpu / top.power_w;
  for (const auto& pt : m->points) {
    if (!j.curve.empty() && pt.cap_w <= j.curve.back().cap_w) continue;
    j.curve.push_back({pt.cap_w, pt.power_w * scale, pt.throughput / top.throughput});
  }
  for (size_t k = 1; k < j.curve.size(); ++k) {
    if (j.curve[k].power_w < j.curve[k - 1].power_w) {
      return n["sweep_job"].error("the sweep's power falls as the cap rises (cap " +
                                  std::to_string(j.curve[k].cap_w) + " W)");
    }
  }
  return j;
}

Result<DrStep> parse_step(const ConfigNode& n) {
  if (!n.is_map()) return n.error("expected a map {start_s, ramp_s, depth}");
  FW_RETURN_IF_ERROR(n.reject_unknown({"start_s", "ramp_s", "depth"}));
  if (!n.has("start_s")) return n.error("missing `start_s`");
  if (!n.has("depth")) return n.error("missing `depth`");
  DrStep s;
  FW_ASSIGN_OR_RETURN(s.start_s, n.get_double("start_s", 0, 0, 1e9));
  FW_ASSIGN_OR_RETURN(s.ramp_s, n.get_double("ramp_s", 0, 0, 1e9));
  FW_ASSIGN_OR_RETURN(s.depth, n.get_double("depth", 0, 0, 1));
  return s;
}

Status parse_event(const ConfigNode& e, DrEvent& ev) {
  if (!e.is_map()) return e.error("expected a map {steps, end_s, release_ramp_s}");
  FW_RETURN_IF_ERROR(e.reject_unknown(
      {"steps", "end_s", "release_ramp_s", "ramp_down_w_per_s", "ramp_up_w_per_s"}));
  ConfigNode steps = e["steps"];
  if (!steps.is_sequence() || steps.size() == 0) return e.error("`steps`: a non-empty list");
  for (size_t i = 0; i < steps.size(); ++i) {
    FW_ASSIGN_OR_RETURN(DrStep s, parse_step(steps.at(i)));
    if (!ev.steps.empty() && s.start_s < ev.steps.back().start_s + ev.steps.back().ramp_s) {
      return steps.at(i)["start_s"].error("must be at or after the previous step's start + ramp");
    }
    ev.steps.push_back(s);
  }
  if (!e.has("end_s")) return e.error("missing `end_s`");
  FW_ASSIGN_OR_RETURN(ev.end_s, e.get_double("end_s", 0, 0, 1e9));
  const DrStep& last = ev.steps.back();
  if (ev.end_s < last.start_s + last.ramp_s) {
    return e["end_s"].error("must be at or after the last step's start + ramp");
  }
  FW_ASSIGN_OR_RETURN(ev.release_ramp_s, e.get_double("release_ramp_s", 0, 0, 1e9));
  FW_ASSIGN_OR_RETURN(ev.ramp_down_w_per_s, e.get_double("ramp_down_w_per_s", 0, 0, 1e12));
  FW_ASSIGN_OR_RETURN(ev.ramp_up_w_per_s, e.get_double("ramp_up_w_per_s", 0, 0, 1e12));
  if (ev.end_s + ev.release_ramp_s > ev.duration_s) {
    return e["end_s"].error("end_s + release_ramp_s is past duration_s (" +
                            std::to_string(ev.duration_s) + ")");
  }
  return Status::Ok();
}

Result<DrEvent> parse_root(const ConfigNode& root, const std::string& path,
                           const std::string& base_dir) {
  if (!root.is_map()) return root.error("expected a map with sample_period_s, jobs and event");
  FW_RETURN_IF_ERROR(root.reject_unknown(
      {"sample_period_s", "duration_s", "baseline_w", "jobs", "event", "seed", "tolerance_frac",
       "gpus_per_node", "cap_lag_s", "noise_tau_s", "resume_s", "plant_error_frac", "noise"}));
  DrEvent ev;
  ev.path = path;
  FW_ASSIGN_OR_RETURN(ev.sample_period_s, root.get_double("sample_period_s", 0.5, 0.01, 60));
  if (!root.has("duration_s")) return root.error("missing `duration_s`");
  FW_ASSIGN_OR_RETURN(ev.duration_s, root.get_double("duration_s", 0, 1, 1e8));
  if (ev.duration_s / ev.sample_period_s > 5e7) {
    return root["duration_s"].error("more than 5e7 samples; raise sample_period_s");
  }
  ConfigNode b = root["baseline_w"];
  if (!b.defined()) return root.error("missing `baseline_w` (watts or `measured`)");
  auto bs = b.as_string();
  if (bs.ok() && *bs == "measured") {
    ev.baseline_measured = true;
  } else {
    auto w = b.as_double(1, 1e12);
    if (!w.ok()) return b.error("expected watts or `measured`");
    ev.baseline_measured = false;
    ev.baseline_w = *w;
  }
  FW_ASSIGN_OR_RETURN(auto seed, root.get_int("seed", 1, 0));
  ev.seed = static_cast<uint64_t>(seed);
  FW_ASSIGN_OR_RETURN(ev.tolerance_frac, root.get_double("tolerance_frac", 0.01, 0, 0.5));
  FW_ASSIGN_OR_RETURN(auto gpn, root.get_int("gpus_per_node", 8, 1, 1024));
  ev.gpus_per_node = static_cast<int>(gpn);
  FW_ASSIGN_OR_RETURN(ev.cap_lag_s, root.get_double("cap_lag_s", 0.5, 0, 60));
  FW_ASSIGN_OR_RETURN(ev.noise_tau_s, root.get_double("noise_tau_s", kDrNoiseTauS, 0.01, 3600));
  FW_ASSIGN_OR_RETURN(ev.resume_s, root.get_double("resume_s", 120, 0, 36000));
  FW_ASSIGN_OR_RETURN(ev.plant_error_frac, root.get_double("plant_error_frac", 0, 0, 0.5));
  FW_ASSIGN_OR_RETURN(const std::string noise, root.get_string("noise", "field"));
  auto mode = parse_dr_noise(noise);
  if (!mode.ok()) return root["noise"].error(mode.status().message());
  ConfigNode jobs = root["jobs"];
  if (!jobs.is_sequence() || jobs.size() == 0) return root.error("`jobs`: a non-empty list");
  for (size_t i = 0; i < jobs.size(); ++i) {
    FW_ASSIGN_OR_RETURN(DrJobSpec j, parse_dr_job(jobs.at(i), i, base_dir));
    for (const auto& o : ev.jobs) {
      if (o.name == j.name) return jobs.at(i)["name"].error("duplicate job name '" + j.name + "'");
    }
    ev.jobs.push_back(std::move(j));
  }
  // A job with no `dips` key dips as the field's training jobs do, the jobs' first dips spread
  // over the period (job k of n at (k + 0.5) / n of it).
  const double n_jobs = static_cast<double>(ev.jobs.size());
  for (size_t i = 0; i < ev.jobs.size(); ++i) {
    if (jobs.at(i).has("dips")) continue;
    ev.jobs[i].field_dips = {kDrFieldDipPeriodS,
                             kDrFieldDipPeriodS * (static_cast<double>(i) + 0.5) / n_jobs,
                             kDrFieldDipDurationS, kDrFieldDipLevel};
  }
  set_dr_noise(ev, *mode);
  if (!root.has("event")) return root.error("missing `event`");
  FW_RETURN_IF_ERROR(parse_event(root["event"], ev));
  if (ev.baseline_measured && ev.steps.front().start_s < 60) {
    return root["baseline_w"].error(
        "`measured` needs at least 60 s before the first step (its start_s is " +
        std::to_string(ev.steps.front().start_s) + ")");
  }
  return ev;
}

double lerp_cap(const DrJobSpec& j, double cap_w, double DrCapPoint::*field) {
  const auto& c = j.curve;
  if (cap_w <= c.front().cap_w) return c.front().*field;
  for (size_t k = 1; k < c.size(); ++k) {
    if (cap_w <= c[k].cap_w) {
      const double f = (cap_w - c[k - 1].cap_w) / (c[k].cap_w - c[k - 1].cap_w);
      return c[k - 1].*field + f * (c[k].*field - c[k - 1].*field);
    }
  }
  return c.back().*field;
}

}  // namespace

Result<DrNoise> parse_dr_noise(const std::string& name) {
  if (name == "field") return DrNoise::kField;
  if (name == "quiet") return DrNoise::kQuiet;
  return Status::InvalidArgument("expected `field` or `quiet`, got '" + name + "'");
}

void set_dr_noise(DrEvent& ev, DrNoise mode) {
  ev.noise = mode;
  for (auto& j : ev.jobs) {
    j.noise_frac_1min = mode == DrNoise::kQuiet ? kDrQuietNoiseFrac1min : j.field_noise_frac_1min;
    j.dips = mode == DrNoise::kQuiet ? DrDips{} : j.field_dips;
  }
}

Result<DrEvent> parse_dr_event(const std::string& text, const std::string& name,
                               const std::string& base_dir) {
  FW_ASSIGN_OR_RETURN(ConfigNode root, ConfigNode::parse(text, name));
  return parse_root(root, name, base_dir);
}

Result<DrEvent> load_dr_event(const std::string& path) {
  FW_ASSIGN_OR_RETURN(ConfigNode root, ConfigNode::load_file(path));
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return parse_root(root, path, dir);
}

double dr_depth_at(const DrEvent& ev, double t) {
  if (ev.steps.empty() || t <= ev.steps.front().start_s) return 0;
  double depth = 0;
  for (const auto& s : ev.steps) {
    if (t <= s.start_s) break;
    if (s.ramp_s > 0 && t < s.start_s + s.ramp_s) {
      depth += (s.depth - depth) * (t - s.start_s) / s.ramp_s;
      break;
    }
    depth = s.depth;
  }
  if (t >= ev.end_s) {
    const double held = ev.steps.back().depth;
    if (ev.release_ramp_s <= 0 || t >= ev.end_s + ev.release_ramp_s) return 0;
    return held * (1 - (t - ev.end_s) / ev.release_ramp_s);
  }
  return depth;
}

std::vector<DrHold> dr_holds(const DrEvent& ev) {
  std::vector<DrHold> out;
  for (size_t i = 0; i < ev.steps.size(); ++i) {
    const auto& s = ev.steps[i];
    const double to = i + 1 < ev.steps.size() ? ev.steps[i + 1].start_s : ev.end_s;
    if (to > s.start_s + s.ramp_s) out.push_back({s.start_s + s.ramp_s, to, s.depth});
  }
  return out;
}

double dr_power_at(const DrJobSpec& j, double cap_w) {
  return lerp_cap(j, cap_w, &DrCapPoint::power_w);
}
double dr_t_rel_at(const DrJobSpec& j, double cap_w) {
  return lerp_cap(j, cap_w, &DrCapPoint::t_rel);
}

double dr_cap_for(const DrJobSpec& j, double power_w) {
  const auto& c = j.curve;
  if (power_w <= c.front().power_w) return c.front().cap_w;
  for (size_t k = 1; k < c.size(); ++k) {
    if (power_w <= c[k].power_w && c[k].power_w > c[k - 1].power_w) {
      const double f = (power_w - c[k - 1].power_w) / (c[k].power_w - c[k - 1].power_w);
      return c[k - 1].cap_w + f * (c[k].cap_w - c[k - 1].cap_w);
    }
  }
  return c.back().cap_w;
}

}  // namespace fw::studies
