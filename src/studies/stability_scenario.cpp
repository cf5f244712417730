#include "studies/stability_scenario.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/config.hpp"
#include "hw/gpu_catalog.hpp"

namespace fw::studies {
namespace {

#define FW_SGET(var, expr) FW_ASSIGN_OR_RETURN(var, expr)

// The stabilize arm's settings searched on the calibration seeds when the scenario lists none
// (docs/stabilization.md, "The feed-forward controller").
std::vector<std::string> default_stabilize_specs() {
  std::vector<std::string> out;
  for (const char* floor : {"60", "65", "70", "75", "80"}) {
    for (const char* ramp : {"40", "50"}) {
      for (const char* hold : {"85", "90"}) {
        out.push_back(std::string("stabilize:floor_pct=") + floor + ",ramp_w_per_s=" + ramp +
                      ",hold_pct=" + hold);
      }
    }
  }
  return out;
}

// A list of numbers in [lo, hi] (a lone number is a list of one); `fallback` when absent.
Result<std::vector<double>> get_list(const ConfigNode& parent, const std::string& key,
                                     const std::vector<double>& fallback, double lo, double hi,
                                     bool allow_empty = false) {
  const ConfigNode n = parent[key];
  if (!n.defined()) return fallback;
  std::vector<double> out;
  if (n.is_scalar()) {
    FW_SGET(double v, n.as_double(lo, hi));
    out.push_back(v);
  } else if (n.is_sequence()) {
    for (size_t i = 0; i < n.size(); ++i) {
      FW_SGET(double v, n.at(i).as_double(lo, hi));
      out.push_back(v);
    }
  } else {
    return n.error("must be a number or a list of numbers");
  }
  if (out.empty() && !allow_empty) return n.error("must not be empty");
  if (out.size() > 64) return n.error("at most 64 values");
  return out;
}

Status parse_smoothing_grid(const ConfigNode& n, SmoothingGrid& g, bool combined) {
  if (!n.defined()) return Status::Ok();
  if (!n.is_map()) return n.error("must be a map");
  FW_RETURN_IF_ERROR(n.reject_unknown(
      {"floor_frac", "ramp_up_w_per_s", "ramp_down_w_per_s", "hysteresis_ms", "include_off"}));
  FW_SGET(g.floor_frac, get_list(n, "floor_frac", g.floor_frac, 0, 1, combined));
  FW_SGET(g.ramp_up_w_per_s, get_list(n, "ramp_up_w_per_s", g.ramp_up_w_per_s, 1e-3, 1e6));
  FW_SGET(g.ramp_down_w_per_s, get_list(n, "ramp_down_w_per_s", g.ramp_down_w_per_s, 1e-3, 1e6));
  FW_SGET(g.hysteresis_ms, get_list(n, "hysteresis_ms", g.hysteresis_ms, 0, 1e6));
  FW_SGET(g.include_off, n.get_bool("include_off", g.include_off));
  return Status::Ok();
}

Status parse_limits(const ConfigNode& n, StabilityLimitSpec& l) {
  if (!n.defined()) return Status::Ok();
  FW_RETURN_IF_ERROR(n.reject_unknown({"max_ramp_frac_per_s", "ramp_window_s", "ramp_windows_s",
                                       "band_hz", "max_band_frac", "steady_s"}));
  FW_SGET(l.max_ramp_frac_per_s,
          n.get_double("max_ramp_frac_per_s", l.max_ramp_frac_per_s, 1e-4, 10));
  FW_SGET(l.ramp_window_s, n.get_double("ramp_window_s", l.ramp_window_s, 0.01, 600));
  FW_SGET(l.ramp_windows_s, get_list(n, "ramp_windows_s", l.ramp_windows_s, 0.01, 600));
  FW_SGET(l.max_band_frac, n.get_double("max_band_frac", l.max_band_frac, 0, 1));
  if (n.has("band_hz")) {
    FW_SGET(auto b, get_list(n, "band_hz", {}, 0, 1000));
    if (b.size() != 2 || !(b[0] < b[1])) return n["band_hz"].error("must be [lo, hi] with lo < hi");
    l.band_lo_hz = b[0];
    l.band_hi_hz = b[1];
  }
  if (n.has("steady_s")) {
    FW_SGET(auto s, get_list(n, "steady_s", {}, 0, 1e6));
    if (s.size() != 2 || !(s[0] < s[1]))
      return n["steady_s"].error("must be [from, to], from < to");
    l.steady_from_s = s[0];
    l.steady_to_s = s[1];
  }
  return Status::Ok();
}

Status parse_search(const ConfigNode& n, StabilitySearch& s) {
  if (!n.defined()) return Status::Ok();
  FW_RETURN_IF_ERROR(n.reject_unknown(
      {"cap_frac", "smoothing", "fill_frac", "stagger_s", "combined", "stabilize"}));
  const ConfigNode st = n["stabilize"];
  if (st.defined()) {
    if (!st.is_sequence()) return st.error("must be a list of controller specs");
    s.stabilize.clear();
    for (size_t i = 0; i < st.size(); ++i) {
      FW_SGET(std::string spec, st.at(i).as_string());
      if (spec.empty()) return st.at(i).error("must not be empty");
      s.stabilize.push_back(spec);
    }
    if (s.stabilize.size() > 64) return st.error("at most 64 specs");
  }
  FW_SGET(s.cap_frac, get_list(n, "cap_frac", s.cap_frac, 0.01, 1));
  FW_SGET(s.fill_frac, get_list(n, "fill_frac", s.fill_frac, 0.01, 1));
  FW_SGET(s.stagger_s, get_list(n, "stagger_s", s.stagger_s, 0.01, 1e5));
  FW_RETURN_IF_ERROR(parse_smoothing_grid(n["smoothing"], s.smoothing, false));
  const ConfigNode c = n["combined"];
  if (c.defined()) {
    FW_RETURN_IF_ERROR(c.reject_unknown({"cap_frac", "smoothing", "fill_frac", "stagger_s"}));
    MitigationGrid& g = s.combined;
    FW_SGET(g.cap_frac, get_list(c, "cap_frac", g.cap_frac, 0.01, 1));
    FW_SGET(g.fill_frac, get_list(c, "fill_frac", g.fill_frac, 0, 1));
    FW_SGET(g.stagger_s, get_list(c, "stagger_s", g.stagger_s, 0, 1e5));
    FW_RETURN_IF_ERROR(parse_smoothing_grid(c["smoothing"], g.smoothing, true));
  }
  return Status::Ok();
}

Result<StabilityScenario> from_config(ConfigNode& root, const std::string& name,
                                      const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) FW_RETURN_IF_ERROR(apply_override(root, o));
  if (!root.is_map()) return root.error("a stability scenario is a map");
  FW_RETURN_IF_ERROR(root.reject_unknown({"name", "description", "duration_s", "site", "sim", "job",
                                          "fill_cost", "limits", "search", "objective"}));
  StabilityScenario sc;
  sc.path = name;
  sc.overrides = overrides;
  FW_SGET(sc.name, root.get_string("name", name));
  FW_SGET(sc.description, root.get_string("description", ""));
  sim::SiteSpec& s = sc.site;
  s.name = sc.name;
  s.description = sc.description;
  s.path = name;
  FW_SGET(s.duration_s, root.get_double("duration_s", 300, 1, 1e5));

  const ConfigNode site = root["site"];
  if (!site.defined()) return root.error("missing key 'site'");
  FW_RETURN_IF_ERROR(site.reject_unknown({"gpus", "gpu", "smoothing_model", "representatives"}));
  FW_SGET(s.gpus, site.get_int("gpus", 1024, 1, 10'000'000));
  FW_SGET(s.gpu_model, site.get_string("gpu", "h100-sxm5"));
  s.gpu = sim::find_gpu_preset(s.gpu_model);
  if (s.gpu == nullptr) {
    return site["gpu"].error("'" + s.gpu_model + "' is not one of " + sim::gpu_preset_names());
  }
  FW_SGET(s.smoothing_model, site.get_string("smoothing_model", ""));
  if (!s.smoothing_model.empty()) {
    s.smoothing = sim::find_smoothing_capability(s.smoothing_model);
    if (s.smoothing == nullptr) {
      return site["smoothing_model"].error("'" + s.smoothing_model + "' is not one of " +
                                           sim::smoothing_capability_names());
    }
  }

  const ConfigNode job = root["job"];
  if (job.defined())
    FW_RETURN_IF_ERROR(
        job.reject_unknown({"workload", "tp", "tokens_per_iter", "iter_jitter",
                            "checkpoint_every_iters", "checkpoint_s", "start_s", "end_s"}));
  sim::SiteJob& j = s.job;
  FW_SGET(j.workload, job.get_string("workload", j.workload));
  const sim::PretrainModel* pm = sim::find_pretrain_model(j.workload);
  if (pm == nullptr) {
    return job["workload"].error("'" + j.workload + "' is not one of " +
                                 sim::pretrain_model_names());
  }
  j.model = *pm;
  FW_SGET(int64_t tp, job.get_int("tp", j.tp, 1, 64));
  j.tp = static_cast<int>(tp);
  FW_SGET(j.tokens_per_iter, job.get_double("tokens_per_iter", j.tokens_per_iter, 1, 1e12));
  FW_SGET(j.iter_jitter, job.get_double("iter_jitter", j.iter_jitter, 0, 1));
  FW_SGET(int64_t every, job.get_int("checkpoint_every_iters", 0, 0, 100'000'000));
  j.checkpoint_every_iters = static_cast<int>(every);
  FW_SGET(j.checkpoint_s, job.get_double("checkpoint_s", j.checkpoint_s, 0, 36000));
  FW_SGET(j.start_s, job.get_double("start_s", j.start_s, 0, 1e6));
  FW_SGET(j.end_s, job.get_double("end_s", std::numeric_limits<double>::infinity(), 0, 1e300));
  if (!(j.start_s < s.duration_s)) return job["start_s"].error("must be before duration_s");
  if (!(j.end_s > j.start_s)) return job["end_s"].error("must be after start_s");
  if (s.gpus % j.tp != 0) {
    return site["gpus"].error(std::to_string(s.gpus) + " is not a multiple of job.tp " +
                              std::to_string(j.tp));
  }
  FW_SGET(int64_t reps,
          site.get_int("representatives", std::min<int64_t>(64, s.ranks()), 1, s.ranks()));
  s.representatives = static_cast<int>(reps);

  const ConfigNode sim_n = root["sim"];
  if (sim_n.defined()) FW_RETURN_IF_ERROR(sim_n.reject_unknown({"dt_s", "output_period_s"}));
  FW_SGET(s.dt_s, sim_n.get_double("dt_s", s.dt_s, 0.001, 0.1));
  FW_SGET(s.output_period_s, sim_n.get_double("output_period_s", s.output_period_s, 0.001, 10));
  const double ratio = s.output_period_s / s.dt_s;
  if (ratio < 1 - 1e-9 || std::fabs(ratio - std::round(ratio)) > 1e-6) {
    return sim_n["output_period_s"].error("must be a whole number of sim.dt_s");
  }

  const ConfigNode fc = root["fill_cost"];
  if (fc.defined()) FW_RETURN_IF_ERROR(fc.reject_unknown({"slowdown", "while_active"}));
  FW_SGET(s.fill_cost.slowdown, fc.get_double("slowdown", s.fill_cost.slowdown, 0, 0.99));
  FW_SGET(s.fill_cost.while_active, fc.get_bool("while_active", s.fill_cost.while_active));

  // Defaults of the grids (docs/stabilization.md); a scenario may replace any list.
  StabilitySearch& se = sc.search;
  se.cap_frac = {0.9, 0.8, 0.7, 0.6, 0.5, 0.4};
  se.fill_frac = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  se.stagger_s = {5, 10, 20, 30, 40};
  se.combined.cap_frac = {1.0, 0.85};
  se.combined.fill_frac = {0, 0.5, 0.7};
  se.combined.stagger_s = {0, 15, 30};
  if (s.smoothing != nullptr) {  // without a smoothing model the smoothing grids stay empty
    se.smoothing = {
        {0.2, 0.4, 0.6, 0.8, 0.9}, {25, 50, 100, 200}, {25, 50, 100, 200}, {0, 1000}, false};
    se.combined.smoothing = {{0.5, 0.7}, {100}, {50, 100}, {1000}, true};
    se.stabilize = default_stabilize_specs();
  }
  const ConfigNode search = root["search"];
  if (s.smoothing == nullptr) {
    for (const ConfigNode& n :
         {search["smoothing"], search["combined"]["smoothing"], search["stabilize"]}) {
      if (n.defined()) {
        return n.error("needs site.smoothing_model: GPU model " + s.gpu_model +
                       " has no power smoothing (one of " + sim::smoothing_capability_names() +
                       ")");
      }
    }
  }
  FW_RETURN_IF_ERROR(parse_limits(root["limits"], sc.limits));
  if (sc.limits.steady_to_s > s.duration_s) {
    return root["limits"]["steady_s"].error("must end by duration_s");
  }
  FW_RETURN_IF_ERROR(parse_search(search, se));
  const ConfigNode ob = root["objective"];
  if (ob.defined())
    FW_RETURN_IF_ERROR(ob.reject_unknown({"usd_per_gpu_hour", "usd_per_kwh", "events_every_h"}));
  FW_SGET(sc.objective.events_every_h,
          ob.get_double("events_every_h", sc.objective.events_every_h, 1e-3, 1e5));
  FW_SGET(sc.objective.usd_per_gpu_hour,
          ob.get_double("usd_per_gpu_hour", sc.objective.usd_per_gpu_hour, 1e-6, 1e6));
  FW_SGET(sc.objective.usd_per_kwh, ob.get_double("usd_per_kwh", sc.objective.usd_per_kwh, 0, 1e3));

  // Settings the site cannot run are errors here, naming the arm and the setting.
  for (const char* arm : {"caps", "smoothing", "fill", "stagger", "combined"}) {
    for (const sim::SiteMitigations& m : arm_candidates(se, arm)) {
      Status st = sim::validate(s, m);
      if (!st.ok()) {
        const ConfigNode where = search.defined() ? search : root;
        return where.error(std::string(arm) + ": " + sim::describe(m) + ": " + st.message());
      }
    }
  }
  return sc;
}

}  // namespace

std::vector<sim::SmoothingSettings> SmoothingGrid::settings() const {
  std::vector<sim::SmoothingSettings> out;
  if (include_off) out.push_back(sim::SmoothingSettings{});
  for (double f : floor_frac) {
    for (double up : ramp_up_w_per_s) {
      for (double down : ramp_down_w_per_s) {
        for (double h : hysteresis_ms) out.push_back({true, f, up, down, h});
      }
    }
  }
  return out;
}

std::vector<sim::SiteMitigations> arm_candidates(const StabilitySearch& s, const std::string& arm) {
  std::vector<sim::SiteMitigations> out;
  sim::SiteMitigations m;
  if (arm == "caps") {
    for (double c : s.cap_frac) {
      m.cap_frac = c;
      out.push_back(m);
    }
  } else if (arm == "smoothing") {
    for (const auto& sm : s.smoothing.settings()) {
      m.smoothing = sm;
      out.push_back(m);
    }
  } else if (arm == "fill") {
    for (double f : s.fill_frac) {
      m.fill = {true, f};
      out.push_back(m);
    }
  } else if (arm == "stagger") {
    for (double st : s.stagger_s) {
      m.stagger = {st};
      out.push_back(m);
    }
  } else if (arm == "combined") {
    const MitigationGrid& g = s.combined;
    std::vector<sim::SmoothingSettings> sms = g.smoothing.settings();
    if (sms.empty()) sms.push_back({});
    for (double c : g.cap_frac) {
      for (const auto& sm : sms) {
        for (double f : g.fill_frac) {
          for (double st : g.stagger_s) {
            out.push_back({c, sm, {f > 0, f}, {st}});
          }
        }
      }
    }
    // Every single arm's settings too: the joint search is never weaker than the best single
    // mitigation. Duplicates (by description) are dropped, the first kept.
    for (const char* single : {"caps", "smoothing", "fill", "stagger"}) {
      for (const auto& c : arm_candidates(s, single)) out.push_back(c);
    }
    std::vector<sim::SiteMitigations> unique;
    std::vector<std::string> seen;
    for (const auto& c : out) {
      const std::string d = sim::describe(c);
      if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
      seen.push_back(d);
      unique.push_back(c);
    }
    out = std::move(unique);
  }
  return out;
}

Result<StabilityScenario> parse_stability_scenario(const std::string& text, const std::string& name,
                                                   const std::vector<std::string>& overrides) {
  FW_ASSIGN_OR_RETURN(ConfigNode root, ConfigNode::parse(text, name));
  return from_config(root, name, overrides);
}

Result<StabilityScenario> load_stability_scenario(const std::string& path,
                                                  const std::vector<std::string>& overrides) {
  FW_ASSIGN_OR_RETURN(ConfigNode root, ConfigNode::load_file(path));
  return from_config(root, path, overrides);
}

}  // namespace fw::studies
