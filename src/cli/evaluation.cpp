#include "cli/evaluation.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <thread>

#include "cli/json_fields.hpp"
#include "control/control_loop.hpp"
#include "control/recorder.hpp"
#include "core/version.hpp"

namespace fw::cli {
namespace {

// Two-sided 95 % Student t quantile for df degrees of freedom.
double t975(int df) {
  static const double kT[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                              2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                              2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                              2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return 0;
  if (df <= 30) return kT[df];
  return 1.960 + 2.4 / df;  // within 0.002 of the exact quantile above 30
}

nlohmann::json ratio_json(double a, double b) {
  if (!(std::abs(b) > 0) || !std::isfinite(a / b)) return nullptr;
  return a / b;
}

std::string dir_label(const std::string& text) {
  std::string s;
  for (char c : text)
    s +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return s;
}

std::string fmt_stat(const Stat& s, double scale, int decimals) {
  char buf[64];
  if (std::isnan(s.mean)) return "-";  // no verdict (e.g. a window longer than the run)
  if (std::isnan(s.ci95)) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, s.mean * scale);
  } else {
    std::snprintf(buf, sizeof buf, "%.*f ±%.*f", decimals, s.mean * scale, decimals,
                  s.ci95 * scale);
  }
  return buf;
}

std::string fmt_ratio(const nlohmann::json& r) {
  if (r.is_null()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", r.get<double>());
  return buf;
}

std::string window_key(double w) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", w);
  return buf;
}

// The windows shown in the table and in "violation_rate".
bool is_headline_window(double w) { return w == 0.5 || w == 30 || w == 300; }

struct Task {
  size_t controller;
  uint64_t seed;
};

}  // namespace

Stat stat_of(const std::vector<double>& v) {
  Stat s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= v.size();
  if (v.size() < 2) return s;
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  const double sd = std::sqrt(ss / (v.size() - 1));
  s.ci95 = t975(static_cast<int>(v.size()) - 1) * sd / std::sqrt(static_cast<double>(v.size()));
  return s;
}

nlohmann::json to_json(const Stat& s) {
  return {{"mean", s.mean},
          {"ci95", std::isnan(s.ci95) ? nlohmann::json(nullptr) : nlohmann::json(s.ci95)}};
}

std::string episode_trace_dir(const std::string& out_dir, const std::string& label, uint64_t seed) {
  return out_dir + "/" + dir_label(label) + "/seed-" + std::to_string(seed);
}

int EvalReport::window_index(double window_s) const {
  for (size_t w = 0; w < windows_s.size(); ++w) {
    if (windows_s[w] == window_s) return static_cast<int>(w);
  }
  return -1;
}

int EvalReport::find(const std::string& name) const {
  for (size_t c = 0; c < controllers.size(); ++c) {
    if (controllers[c].name == name) return static_cast<int>(c);
  }
  return -1;
}

Result<EvalReport> run_evaluation(const EvalRequest& req, const ProgressFn& progress) {
  if (req.seeds.empty()) return Status::InvalidArgument("no evaluation seeds");
  const sim::Scenario& scenario = req.scenario;
  // Calibration seeds: fixed (so the number of seeds does not move the static setting) and
  // disjoint from the evaluation seeds.
  uint64_t cal_base = 1000001;
  for (uint64_t s : req.seeds) {
    if (s == cal_base || s == cal_base + 1) {
      cal_base = *std::max_element(req.seeds.begin(), req.seeds.end()) + 1000;
      break;
    }
  }
  ControllerEnv env;
  {
    auto probe = sim::make_plant(scenario, req.seeds.front());
    if (!probe) return Status::Internal("could not build the simulated plant");
    env.info = probe->info();
  }
  env.budget = scenario.budget;
  env.sample_period_s = scenario.sample_period_s;
  env.duration_s = scenario.duration_s;
  const sim::Scenario* sc = &scenario;
  env.make_plant = [sc](uint64_t seed) { return sim::make_plant(*sc, seed); };
  env.calibration_seeds = {cal_base, cal_base + 1};
  env.limiter.budget_shield = req.shield;

  const auto wall0 = std::chrono::steady_clock::now();
  std::vector<PreparedController> prepared;
  for (const ControllerSpec& spec : req.specs) {
    auto p = prepare_controller(spec, env);
    if (!p.ok()) return p.status();
    prepared.push_back(std::move(p).value());
  }

  std::vector<Task> tasks;
  for (size_t c = 0; c < prepared.size(); ++c) {
    for (uint64_t s : req.seeds) tasks.push_back({c, s});
  }
  std::vector<EpisodeResult> results(tasks.size());
  std::vector<Status> statuses(tasks.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mu;
  auto worker = [&] {
    for (size_t i = next++; i < tasks.size(); i = next++) {
      const Task& t = tasks[i];
      const std::string& label = req.specs[t.controller].text;
      auto plant = sim::make_plant(scenario, t.seed);
      auto ctrl = prepared[t.controller].make(t.seed);
      LoopConfig lc;
      lc.sample_period_s = scenario.sample_period_s;
      lc.duration_s = scenario.duration_s;
      lc.windows_s = req.windows_s;
      ControlLoop loop(*plant, scenario.budget, lc, env.limiter);
      loop.add_controller(ctrl.get());
      std::unique_ptr<Recorder> rec;
      const size_t seed_pos = static_cast<size_t>(
          std::find(req.seeds.begin(), req.seeds.end(), t.seed) - req.seeds.begin());
      if (!req.out_dir.empty() && seed_pos < req.traced_seeds) {
        const std::string dir = episode_trace_dir(req.out_dir, label, t.seed);
        auto r = Recorder::create(dir);
        if (!r.ok()) {
          statuses[i] = r.status();
          continue;
        }
        rec = std::move(r).value();
        loop.set_recorder(rec.get());
      }
      statuses[i] = loop.run();
      results[i] = loop.result();
      if (rec && statuses[i].ok()) {
        nlohmann::json meta = {{"producer", "flexwatt eval"},
                               {"version", kVersion},
                               {"simulated", true},
                               {"scenario", scenario.name},
                               {"scenario_path", scenario.path},
                               {"overrides", scenario.overrides},
                               {"seed", t.seed},
                               {"controller", label},
                               {"controller_notes", prepared[t.controller].notes},
                               {"duration_s", scenario.duration_s},
                               {"sample_period_s", scenario.sample_period_s},
                               {"limiter_interventions", results[i].limiter.total()}};
        statuses[i] = rec->close(meta);
      }
      const size_t d = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mu);
        progress(d, tasks.size());
      }
    }
  };
  std::vector<std::thread> pool;
  const int n_threads = std::max(1, std::min<int>(req.threads, static_cast<int>(tasks.size())));
  for (int i = 0; i < n_threads; ++i) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!statuses[i].ok()) {
      return statuses[i].with_context(req.specs[tasks[i].controller].text + ", seed " +
                                      std::to_string(tasks[i].seed));
    }
  }

  EvalReport report;
  report.calibration_seeds = env.calibration_seeds;
  report.windows_s = req.windows_s;
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const size_t ns = req.seeds.size();
  for (size_t c = 0; c < prepared.size(); ++c) {
    ControllerSummary row;
    row.label = req.specs[c].text;
    row.name = req.specs[c].name;
    row.notes = prepared[c].notes;
    std::vector<double> tok, en, tpm, inter, power, share, ratio, slide;
    std::vector<std::vector<double>> viol(req.windows_s.size());
    std::vector<WindowStats> pooled(req.windows_s.size());
    const double nameplate_w = env.info.nameplate_w();
    for (size_t k = 0; k < ns; ++k) {
      const EpisodeResult& r = results[c * ns + k];
      tok.push_back(r.tokens);
      en.push_back(r.energy_j);
      tpm.push_back(r.tokens_per_mwh);
      inter.push_back(static_cast<double>(r.limiter.total()));
      power.push_back(r.mean_power_w);
      slide.push_back(r.sliding_violation_rate);
      for (size_t w = 0; w < viol.size(); ++w) {
        viol[w].push_back(r.violation_rate[w]);
        pooled[w].window_s = req.windows_s[w];
        pooled[w].windows += r.windows_judged[w];
        if (r.windows_judged[w] > 0) {
          pooled[w].violations += std::llround(r.violation_rate[w] * r.windows_judged[w]);
        }
      }
      const Oversubscription o =
          oversubscription(r.node_window_means_w, kNodeWindowS, 0.0, nameplate_w);
      share.push_back(o.share_of_nameplate);
      ratio.push_back(o.ratio);
      row.episodes.push_back(r);
    }
    row.tokens = stat_of(tok);
    row.energy_j = stat_of(en);
    row.tokens_per_mwh = stat_of(tpm);
    row.interventions = stat_of(inter);
    for (const auto& v : viol) row.violation_rate.push_back(stat_of(v));
    for (WindowStats& w : pooled) {
      w.violation_rate = w.windows ? static_cast<double>(w.violations) / w.windows
                                   : std::numeric_limits<double>::quiet_NaN();  // no verdict
    }
    row.curve = windows_curve(pooled, 0.0);
    row.sliding_violation_rate = stat_of(slide);
    row.peak_share_of_nameplate = stat_of(share);
    row.oversubscription_ratio = stat_of(ratio);
    CostInputs ci;
    ci.energy_j = row.energy_j.mean;
    ci.mean_power_w = stat_of(power).mean;
    ci.tokens = row.tokens.mean;
    ci.nameplate_per_gpu_w = env.info.gpus.empty() ? kUnset : nameplate_w / env.info.gpus.size();
    ci.oversubscription_ratio = row.oversubscription_ratio.mean;
    row.cost = cost_report(ci, req.cost);
    report.controllers.push_back(std::move(row));
  }
  return report;
}

nlohmann::json EvalReport::to_json(const EvalRequest& req) const {
  const sim::Scenario& scenario = req.scenario;
  nlohmann::json out;
  out["scenario"] = scenario.name;
  out["simulated"] = true;
  out["seeds"] = req.seeds;
  out["calibration_seeds"] = calibration_seeds;
  out["duration_s"] = scenario.duration_s;
  out["overrides"] = scenario.overrides;
  out["controllers"] = nlohmann::json::array();
  const int i_static = find("static"), i_oracle = find("oracle");
  // The 30 s rate is the one compared against static (the budget's usual window).
  size_t i30 = 0;
  for (size_t w = 0; w < windows_s.size(); ++w) {
    if (windows_s[w] == 30) i30 = w;
  }
  for (size_t c = 0; c < controllers.size(); ++c) {
    const ControllerSummary& r = controllers[c];
    nlohmann::json viol = nlohmann::json::object();
    nlohmann::json curve = {{"windows_s", nlohmann::json::array()},
                            {"violation_rate", nlohmann::json::array()}};
    for (size_t w = 0; w < windows_s.size(); ++w) {
      if (is_headline_window(windows_s[w])) {
        viol[window_key(windows_s[w])] = fw::cli::to_json(r.violation_rate[w]);
      }
      curve["windows_s"].push_back(windows_s[w]);
      curve["violation_rate"].push_back(fw::cli::to_json(r.violation_rate[w]));
    }
    const double shortest = r.curve.shortest_holding_window_s;
    curve["shortest_holding_window_s"] =
        std::isfinite(shortest) ? nlohmann::json(shortest) : nlohmann::json(nullptr);
    nlohmann::json j = {{"name", r.label},
                        {"tokens", fw::cli::to_json(r.tokens)},
                        {"energy_j", fw::cli::to_json(r.energy_j)},
                        {"tokens_per_mwh", fw::cli::to_json(r.tokens_per_mwh)},
                        {"violation_rate", viol},
                        {"violation_rate_sliding",
                         {{"window_s", req.scenario.budget.entries.front().budget.window_s},
                          {"rate", fw::cli::to_json(r.sliding_violation_rate)}}}};
    if (i_static >= 0) {
      const ControllerSummary& s = controllers[i_static];
      j["vs_static"] = {
          {"tokens", ratio_json(r.tokens.mean, s.tokens.mean)},
          {"tokens_per_mwh", ratio_json(r.tokens_per_mwh.mean, s.tokens_per_mwh.mean)},
          {"violation_rate_30",
           ratio_json(r.violation_rate[i30].mean, s.violation_rate[i30].mean)}};
    } else {
      j["vs_static"] = nullptr;
    }
    if (i_oracle >= 0) {
      j["vs_oracle"] = {{"tokens", ratio_json(r.tokens.mean, controllers[i_oracle].tokens.mean)}};
    } else {
      j["vs_oracle"] = nullptr;
    }
    j["limiter_interventions"] = fw::cli::to_json(r.interventions);
    j["windows_curve"] = curve;
    j["oversubscription"] = {
        {"window_s", kNodeWindowS},
        {"tolerance", 0.0},
        {"peak_share_of_nameplate", fw::cli::to_json(r.peak_share_of_nameplate)},
        {"ratio", fw::cli::to_json(r.oversubscription_ratio)}};
    j["cost"] = cost_report_json<nlohmann::json>(r.cost);
    if (!r.notes.empty()) j["notes"] = r.notes;
    out["controllers"].push_back(j);
  }
  return out;
}

std::string format_eval_table(const EvalRequest& req, const EvalReport& report) {
  const sim::Scenario& scenario = req.scenario;
  const nlohmann::json out = report.to_json(req);
  std::string s;
  char line[1024];
  const Budget& b0 = scenario.budget.entries.front().budget;
  const size_t ns = req.seeds.size();
  std::snprintf(
      line, sizeof line,
      "flexwatt eval — SIMULATED: %s, %zu seed%s (%llu..%llu), %.0f s each; budget %.1f W per %s "
      "over %.0f s windows\n",
      scenario.name.c_str(), ns, ns == 1 ? "" : "s",
      static_cast<unsigned long long>(req.seeds.front()),
      static_cast<unsigned long long>(req.seeds.back()), scenario.duration_s, b0.watts,
      std::string(scope_name(b0.scope)).c_str(), b0.window_s);
  s += line;
  s += "mean ±95% CI across seeds (t-distribution); violation = share of tumbling windows whose "
       "mean exceeded the budget; slide win = share of samples whose trailing budget-window mean "
       "exceeded it\n\n";
  int w = 10;
  for (const auto& c : report.controllers) w = std::max<int>(w, static_cast<int>(c.label.size()));
  std::snprintf(line, sizeof line, "%-*s  %20s  %14s  %20s", w, "controller", "tokens",
                "energy kWh", "tokens/MWh");
  s += line;
  for (double win : report.windows_s) {
    if (!is_headline_window(win)) continue;
    std::snprintf(line, sizeof line, "  %15s", ("viol " + window_key(win) + "s %").c_str());
    s += line;
  }
  std::snprintf(line, sizeof line, "  %15s", "slide win %");
  s += line;
  std::snprintf(line, sizeof line, "  %8s  %8s  %8s  %8s  %8s\n", "tok/stat", "tpm/stat",
                "v30/stat", "tok/orcl", "limiter");
  s += line;
  for (size_t c = 0; c < report.controllers.size(); ++c) {
    const ControllerSummary& r = report.controllers[c];
    const nlohmann::json& j = out["controllers"][c];
    const auto vs = [&](const char* k) {
      return j["vs_static"].is_null() ? std::string("-") : fmt_ratio(j["vs_static"][k]);
    };
    std::snprintf(line, sizeof line, "%-*s  %20s  %14s  %20s", w, r.label.c_str(),
                  fmt_stat(r.tokens, 1, 0).c_str(), fmt_stat(r.energy_j, 1 / 3.6e6, 3).c_str(),
                  fmt_stat(r.tokens_per_mwh, 1, 0).c_str());
    s += line;
    for (size_t w = 0; w < r.violation_rate.size(); ++w) {
      if (!is_headline_window(report.windows_s[w])) continue;
      std::snprintf(line, sizeof line, "  %15s", fmt_stat(r.violation_rate[w], 100, 2).c_str());
      s += line;
    }
    std::snprintf(line, sizeof line, "  %15s", fmt_stat(r.sliding_violation_rate, 100, 2).c_str());
    s += line;
    std::snprintf(line, sizeof line, "  %8s  %8s  %8s  %8s  %8.0f\n", vs("tokens").c_str(),
                  vs("tokens_per_mwh").c_str(), vs("violation_rate_30").c_str(),
                  j["vs_oracle"].is_null() ? "-" : fmt_ratio(j["vs_oracle"]["tokens"]).c_str(),
                  r.interventions.mean);
    s += line;
  }
  // Windows curve, peak demand and cost: one line per controller.
  s += "\nviolation rate (%, pooled over seeds) by window; shortest window at which the budget "
       "held; 30 s peak of the summed power as a share of nameplate, the oversubscription it "
       "supports; energy cost and CO2 at $" +
       std::to_string(req.cost.price_per_kwh).substr(0, 4) + "/kWh, " +
       std::to_string(req.cost.kg_co2_per_kwh).substr(0, 4) + " kg/kWh\n";
  std::snprintf(line, sizeof line, "%-*s", w, "controller");
  s += line;
  for (double win : report.windows_s) {
    std::snprintf(line, sizeof line, " %6s", (window_key(win) + "s").c_str());
    s += line;
  }
  std::snprintf(line, sizeof line, "  %8s  %10s  %8s  %10s  %8s\n", "holds at", "peak/name",
                "oversub", "$/Mtok", "kg CO2");
  s += line;
  for (const ControllerSummary& r : report.controllers) {
    std::snprintf(line, sizeof line, "%-*s", w, r.label.c_str());
    s += line;
    for (const WindowStats& p : r.curve.points) {
      if (p.windows > 0) {
        std::snprintf(line, sizeof line, " %6.2f", 100 * p.violation_rate);
      } else {
        std::snprintf(line, sizeof line, " %6s", "-");  // longer than the run: no verdict
      }
      s += line;
    }
    const double h = r.curve.shortest_holding_window_s;
    const double share = r.peak_share_of_nameplate.mean, ov = r.oversubscription_ratio.mean;
    char share_s[32] = "-", ov_s[32] = "-";
    if (std::isfinite(share)) std::snprintf(share_s, sizeof share_s, "%.1f%%", 100 * share);
    if (std::isfinite(ov)) std::snprintf(ov_s, sizeof ov_s, "%.2fx", ov);
    std::snprintf(line, sizeof line, "  %8s  %10s  %8s  %10.3f  %8.3f\n",
                  std::isfinite(h) ? (window_key(h) + " s").c_str() : "never", share_s, ov_s,
                  r.cost.usd_per_million_tokens, r.cost.co2_kg);
    s += line;
  }
  for (const ControllerSummary& r : report.controllers) {
    if (r.notes.contains("calibration")) {
      const auto& cal = r.notes["calibration"];
      std::snprintf(line, sizeof line,
                    "\n%s: calibrated %s = %g on seeds %s (worst %.0f s window at %.3f x budget%s)",
                    r.label.c_str(), r.notes["actuator"].get<std::string>().c_str(),
                    cal["value"].get<double>(), cal["seeds"].dump().c_str(), b0.window_s,
                    cal["worst_window_ratio"].get<double>(),
                    cal["safe_found"].get<bool>() ? "" : "; NO safe setting found");
      s += line;
    }
  }
  std::snprintf(line, sizeof line, "\n%s(wall %.1f s)\n",
                req.out_dir.empty() ? "" : ("traces: " + req.out_dir + "/  ").c_str(),
                report.wall_s);
  s += line;
  return s;
}

}  // namespace fw::cli
