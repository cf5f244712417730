// flexwatt eval: every controller on the same seeds of a simulated scenario, one table of
// tokens, energy, tokens per MWh and violation rates (mean and 95 % CI across seeds).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/controller_registry.hpp"
#include "cli/verb.hpp"
#include "control/control_loop.hpp"
#include "control/recorder.hpp"
#include "core/version.hpp"
#include "sim/scenario.hpp"

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

struct Stat {
  double mean = 0, ci95 = kUnset;  // ci95: half-width; NaN with fewer than 2 seeds
};

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

struct Task {
  size_t controller;
  uint64_t seed;
};

int run_eval(int argc, char** argv) {
  CLI::App app(
      "Run controllers on the same seeds of a simulated scenario and compare them: tokens, "
      "energy, tokens per MWh, budget violation rates at 0.5 s, 30 s and 300 s windows (mean and "
      "95 % CI across seeds, t-distribution), and ratios to static and oracle.\n\nExample:\n  "
      "flexwatt eval scenarios/grpo-7b-a100.yaml --controllers "
      "uncontrolled,static,threshold,pid:kp=0.5,ki=0.1,zeus,oracle --seeds 5\n  flexwatt eval "
      "--list",
      "eval");
  std::string scenario_path, controllers_arg, out_dir;
  int seeds = 5;
  int64_t seed_base = 1;
  double duration_s = 0;
  std::vector<std::string> sets;
  bool json = false, list = false, shield = false;
  int threads = 2;
  app.add_option("scenario", scenario_path, "scenario file (YAML)");
  app.add_option("--controllers", controllers_arg,
                 "comma-separated controllers with options, e.g. uncontrolled,pid:kp=0.5,ki=0.1");
  app.add_option("--seeds", seeds,
                 "number of seeds (evaluation seeds are seed-base … seed-base+N-1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--seed-base", seed_base, "first evaluation seed")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--duration-s", duration_s, "episode length, s (default: the scenario's)");
  app.add_option("--set", sets, "override a scenario parameter, key.path=value (repeatable)");
  app.add_option("--out", out_dir, "keep every trace: DIR/<controller>/seed-<seed>/");
  app.add_option("--threads", threads, "episodes run in parallel (results do not depend on it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--shield", shield,
               "turn on the SafetyLimiter's budget shield for every controller");
  app.add_flag("--json", json, "print the results as JSON on stdout");
  app.add_flag("--list", list, "list the controllers and their options");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  if (list) {
    if (json) {
      std::printf("%s\n", controller_list_json().dump(2).c_str());
    } else {
      std::printf("controllers (NAME[:KEY=VALUE,...]):\n%s", controller_list_text().c_str());
    }
    return 0;
  }
  if (scenario_path.empty())
    return fail("eval", Status::InvalidArgument("a SCENARIO file is required"));
  if (controllers_arg.empty()) {
    return fail("eval",
                Status::InvalidArgument("--controllers is required (see flexwatt eval --list)"));
  }
  auto loaded = sim::load_scenario(scenario_path, sets);
  if (!loaded.ok()) return fail("eval", loaded.status());
  sim::Scenario scenario = std::move(loaded).value();
  if (app.count("--duration-s")) {
    if (!std::isfinite(duration_s) || duration_s < scenario.sample_period_s) {
      return fail("eval",
                  Status::InvalidArgument("--duration-s must be at least the sample period"));
    }
    scenario.duration_s = duration_s;
  }
  auto specs = parse_controller_list(controllers_arg);
  if (!specs.ok()) return fail("eval", specs.status());

  std::vector<uint64_t> eval_seeds;
  for (int i = 0; i < seeds; ++i) eval_seeds.push_back(static_cast<uint64_t>(seed_base) + i);
  // Calibration seeds: fixed (so --seeds does not move the static setting) and disjoint
  // from the evaluation seeds.
  uint64_t cal_base = 1000001;
  if (cal_base + 1 >= static_cast<uint64_t>(seed_base) &&
      cal_base <= static_cast<uint64_t>(seed_base) + seeds - 1) {
    cal_base = static_cast<uint64_t>(seed_base) + seeds + 1000;
  }
  const sim::Scenario* sc = &scenario;
  ControllerEnv env;
  {
    auto probe = sim::make_plant(scenario, eval_seeds.front());
    if (!probe) return fail("eval", Status::Internal("could not build the simulated plant"));
    env.info = probe->info();
  }
  env.budget = scenario.budget;
  env.sample_period_s = scenario.sample_period_s;
  env.duration_s = scenario.duration_s;
  env.make_plant = [sc](uint64_t seed) { return sim::make_plant(*sc, seed); };
  env.calibration_seeds = {cal_base, cal_base + 1};
  env.limiter.budget_shield = shield;

  const bool tty = stderr_is_tty();
  const auto wall0 = std::chrono::steady_clock::now();
  std::vector<PreparedController> prepared;
  std::vector<std::string> labels;
  for (const ControllerSpec& spec : *specs) {
    if (tty) std::fprintf(stderr, "\reval: preparing %s ...\033[K", spec.text.c_str());
    auto p = prepare_controller(spec, env);
    if (!p.ok()) {
      if (tty) std::fprintf(stderr, "\n");
      return fail("eval", p.status());
    }
    prepared.push_back(std::move(p).value());
    labels.push_back(spec.text);
  }

  std::vector<Task> tasks;
  for (size_t c = 0; c < prepared.size(); ++c) {
    for (uint64_t s : eval_seeds) tasks.push_back({c, s});
  }
  std::vector<EpisodeResult> results(tasks.size());
  std::vector<Status> statuses(tasks.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mu;
  auto worker = [&] {
    for (size_t i = next++; i < tasks.size(); i = next++) {
      const Task& t = tasks[i];
      auto plant = sim::make_plant(scenario, t.seed);
      auto ctrl = prepared[t.controller].make(t.seed);
      LoopConfig lc;
      lc.sample_period_s = scenario.sample_period_s;
      lc.duration_s = scenario.duration_s;
      ControlLoop loop(*plant, scenario.budget, lc, env.limiter);
      loop.add_controller(ctrl.get());
      std::unique_ptr<Recorder> rec;
      if (!out_dir.empty()) {
        const std::string dir =
            out_dir + "/" + dir_label(labels[t.controller]) + "/seed-" + std::to_string(t.seed);
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
                               {"controller", labels[t.controller]},
                               {"controller_notes", prepared[t.controller].notes},
                               {"duration_s", scenario.duration_s},
                               {"sample_period_s", scenario.sample_period_s},
                               {"limiter_interventions", results[i].limiter.total()}};
        statuses[i] = rec->close(meta);
      }
      const size_t d = ++done;
      if (tty) {
        std::lock_guard<std::mutex> lock(progress_mu);
        std::fprintf(stderr, "\reval: %zu/%zu episodes\033[K", d, tasks.size());
      }
    }
  };
  std::vector<std::thread> pool;
  const int n_threads = std::min<int>(threads, static_cast<int>(tasks.size()));
  for (int i = 0; i < n_threads; ++i) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
  if (tty) std::fprintf(stderr, "\r\033[K");
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!statuses[i].ok()) {
      return fail("eval", statuses[i].with_context(labels[tasks[i].controller] + ", seed " +
                                                   std::to_string(tasks[i].seed)));
    }
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  // Aggregate per controller.
  struct Row {
    Stat tokens, energy_j, tpm, v05, v30, v300, interventions;
  };
  std::vector<Row> rows(prepared.size());
  const size_t ns = eval_seeds.size();
  for (size_t c = 0; c < prepared.size(); ++c) {
    std::vector<double> tok, en, tpm, v05, v30, v300, inter;
    for (size_t k = 0; k < ns; ++k) {
      const EpisodeResult& r = results[c * ns + k];
      tok.push_back(r.tokens);
      en.push_back(r.energy_j);
      tpm.push_back(r.tokens_per_mwh);
      v05.push_back(r.violation_rate[0]);
      v30.push_back(r.violation_rate[1]);
      v300.push_back(r.violation_rate[2]);
      inter.push_back(static_cast<double>(r.limiter.total()));
    }
    rows[c] = {stat_of(tok), stat_of(en),   stat_of(tpm),  stat_of(v05),
               stat_of(v30), stat_of(v300), stat_of(inter)};
  }
  auto find = [&](const std::string& name) -> int {
    for (size_t c = 0; c < specs->size(); ++c) {
      if ((*specs)[c].name == name) return static_cast<int>(c);
    }
    return -1;
  };
  const int i_static = find("static"), i_oracle = find("oracle");

  nlohmann::json out;
  out["scenario"] = scenario.name;
  out["simulated"] = true;
  out["seeds"] = eval_seeds;
  out["calibration_seeds"] = env.calibration_seeds;
  out["duration_s"] = scenario.duration_s;
  out["overrides"] = scenario.overrides;
  out["controllers"] = nlohmann::json::array();
  for (size_t c = 0; c < rows.size(); ++c) {
    const Row& r = rows[c];
    nlohmann::json j = {
        {"name", labels[c]},
        {"tokens", to_json(r.tokens)},
        {"energy_j", to_json(r.energy_j)},
        {"tokens_per_mwh", to_json(r.tpm)},
        {"violation_rate",
         {{"0.5", to_json(r.v05)}, {"30", to_json(r.v30)}, {"300", to_json(r.v300)}}}};
    if (i_static >= 0) {
      const Row& s = rows[i_static];
      j["vs_static"] = {{"tokens", ratio_json(r.tokens.mean, s.tokens.mean)},
                        {"tokens_per_mwh", ratio_json(r.tpm.mean, s.tpm.mean)},
                        {"violation_rate_30", ratio_json(r.v30.mean, s.v30.mean)}};
    } else {
      j["vs_static"] = nullptr;
    }
    if (i_oracle >= 0) {
      j["vs_oracle"] = {{"tokens", ratio_json(r.tokens.mean, rows[i_oracle].tokens.mean)}};
    } else {
      j["vs_oracle"] = nullptr;
    }
    j["limiter_interventions"] = to_json(r.interventions);
    if (!prepared[c].notes.empty()) j["notes"] = prepared[c].notes;
    out["controllers"].push_back(j);
  }
  if (json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }

  const Budget& b0 = scenario.budget.entries.front().budget;
  std::printf(
      "flexwatt eval — SIMULATED: %s, %zu seed%s (%llu..%llu), %.0f s each; budget %.1f W per %s "
      "over %.0f s windows\n",
      scenario.name.c_str(), ns, ns == 1 ? "" : "s",
      static_cast<unsigned long long>(eval_seeds.front()),
      static_cast<unsigned long long>(eval_seeds.back()), scenario.duration_s, b0.watts,
      std::string(scope_name(b0.scope)).c_str(), b0.window_s);
  std::printf(
      "mean ±95%% CI across seeds (t-distribution); violation = share of windows whose mean "
      "exceeded the budget\n\n");
  size_t w = 10;
  for (const auto& l : labels) w = std::max(w, l.size());
  std::printf("%-*s  %20s  %14s  %20s  %15s  %15s  %15s  %8s  %8s  %8s  %8s  %8s\n",
              static_cast<int>(w), "controller", "tokens", "energy kWh", "tokens/MWh",
              "viol 0.5s %", "viol 30s %", "viol 300s %", "tok/stat", "tpm/stat", "v30/stat",
              "tok/orcl", "limiter");
  for (size_t c = 0; c < rows.size(); ++c) {
    const Row& r = rows[c];
    const nlohmann::json& j = out["controllers"][c];
    const auto vs = [&](const char* k) {
      return j["vs_static"].is_null() ? std::string("-") : fmt_ratio(j["vs_static"][k]);
    };
    std::printf("%-*s  %20s  %14s  %20s  %15s  %15s  %15s  %8s  %8s  %8s  %8s  %8.0f\n",
                static_cast<int>(w), labels[c].c_str(), fmt_stat(r.tokens, 1, 0).c_str(),
                fmt_stat(r.energy_j, 1 / 3.6e6, 3).c_str(), fmt_stat(r.tpm, 1, 0).c_str(),
                fmt_stat(r.v05, 100, 2).c_str(), fmt_stat(r.v30, 100, 2).c_str(),
                fmt_stat(r.v300, 100, 2).c_str(), vs("tokens").c_str(),
                vs("tokens_per_mwh").c_str(), vs("violation_rate_30").c_str(),
                j["vs_oracle"].is_null() ? "-" : fmt_ratio(j["vs_oracle"]["tokens"]).c_str(),
                r.interventions.mean);
  }
  for (size_t c = 0; c < prepared.size(); ++c) {
    if (prepared[c].notes.contains("calibration")) {
      const auto& cal = prepared[c].notes["calibration"];
      std::printf("\n%s: calibrated %s = %g on seeds %s (worst %.0f s window at %.3f x budget%s)",
                  labels[c].c_str(), prepared[c].notes["actuator"].get<std::string>().c_str(),
                  cal["value"].get<double>(), cal["seeds"].dump().c_str(), b0.window_s,
                  cal["worst_window_ratio"].get<double>(),
                  cal["safe_found"].get<bool>() ? "" : "; NO safe setting found");
    }
  }
  std::printf("\n%s(wall %.1f s)\n", out_dir.empty() ? "" : ("traces: " + out_dir + "/  ").c_str(),
              wall_s);
  return 0;
}

FW_VERB("eval", "compare controllers on the same seeds of a simulated scenario", run_eval);

}  // namespace
}  // namespace fw::cli
