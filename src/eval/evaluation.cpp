#include "eval/evaluation.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "analysis/json_fields.hpp"
#include "control/control_loop.hpp"
#include "control/recorder.hpp"
#include "core/version.hpp"
#include "eval/cap_episode.hpp"

namespace fw::eval {
namespace {

std::string dir_label(const std::string& text) {
  std::string s;
  for (char c : text)
    s +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return s;
}

struct Task {
  size_t controller;
  uint64_t seed;
};

}  // namespace

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

int EvalReport::reference_of(size_t row) const {
  if (auto_reference) return row < row_reference.size() ? row_reference[row] : -1;
  return reference;
}

int EvalReport::find_lookahead() const {
  const int i = find("lookahead");
  return i >= 0 ? i : find("oracle");
}

namespace {

// Calibration seeds: fixed (so the number of seeds does not move the static setting) and
// disjoint from the evaluation seeds.
uint64_t calibration_base(const std::vector<uint64_t>& seeds) {
  const uint64_t base = 1000001;
  for (uint64_t s : seeds) {
    if (s == base || s == base + 1) return *std::max_element(seeds.begin(), seeds.end()) + 1000;
  }
  return base;
}

Result<registry::ControllerEnv> make_env(const EvalRequest& req) {
  const sim::Scenario& scenario = req.scenario;
  registry::ControllerEnv env;
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
  env.declared = std::make_shared<const sim::Scenario>(scenario);
  env.make_plant_at = [sc](double t0_s) -> PlantFactory {
    auto shifted = std::make_shared<sim::Scenario>(sim::shifted_to(*sc, t0_s));
    return [shifted](uint64_t seed) { return sim::make_plant(*shifted, seed); };
  };
  const uint64_t cal_base = calibration_base(req.seeds);
  env.calibration_seeds = {cal_base, cal_base + 1};
  env.limiter.budget_shield = req.shield || req.shield_on_caps;
  env.limiter.shield_on_caps = req.shield_on_caps;
  return env;
}

// One (controller, seed) episode on a fresh plant; its trace when the request keeps one.
Status run_episode(const EvalRequest& req, const registry::ControllerEnv& env,
                   const registry::PreparedController& prepared, const ControllerSpec& spec,
                   uint64_t seed, EpisodeResult& result) {
  const sim::Scenario& scenario = req.scenario;
  auto plant = sim::make_plant(scenario, seed);
  auto ctrl = prepared.make(seed);
  LoopConfig lc;
  lc.sample_period_s = scenario.sample_period_s;
  lc.duration_s = scenario.duration_s;
  lc.windows_s = req.windows_s;
  ControlLoop loop(*plant, scenario.budget, lc, env.limiter);
  loop.add_controller(ctrl.get());
  std::unique_ptr<Recorder> rec;
  const size_t seed_pos =
      static_cast<size_t>(std::find(req.seeds.begin(), req.seeds.end(), seed) - req.seeds.begin());
  if (!req.out_dir.empty() && seed_pos < req.traced_seeds) {
    FW_ASSIGN_OR_RETURN(rec, Recorder::create(episode_trace_dir(req.out_dir, spec.text, seed)));
    loop.set_recorder(rec.get());
  }
  Status s = loop.run();
  result = loop.result();
  result.decision_wall_s = loop.decision_wall_s();
  result.decisions = loop.decisions();
  result.decision_cost = loop.decision_cost();
  if (!rec || !s.ok()) return s;
  const nlohmann::json meta = {{"producer", "flexwatt eval"},
                               {"version", kVersion},
                               {"simulated", true},
                               {"scenario", scenario.name},
                               {"scenario_path", scenario.path},
                               {"overrides", scenario.overrides},
                               {"seed", seed},
                               {"controller", spec.text},
                               {"controller_notes", prepared.notes},
                               {"controller_options", prepared.options},
                               {"duration_s", scenario.duration_s},
                               {"sample_period_s", scenario.sample_period_s},
                               {"limiter_interventions", result.limiter.total()}};
  return rec->close(meta);
}

// Every (controller, seed) episode over req.threads workers; results in controller-major,
// seed-minor order. The first failure (in that order) is returned.
Result<std::vector<EpisodeResult>> run_episodes(
    const EvalRequest& req, const std::vector<ControllerSpec>& specs,
    const registry::ControllerEnv& env, const std::vector<registry::PreparedController>& prepared,
    const ProgressFn& progress) {
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
      statuses[i] =
          run_episode(req, env, prepared[t.controller], specs[t.controller], t.seed, results[i]);
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
      return statuses[i].with_context(specs[tasks[i].controller].text + ", seed " +
                                      std::to_string(tasks[i].seed));
    }
  }
  return results;
}

// InvalidArgument when the row reports that its calibration found no safe setting.
Status check_safe_reference(const ControllerSummary& row) {
  const nlohmann::json& notes = row.notes;
  if (notes.contains("calibration") && !notes["calibration"].value("safe_found", true)) {
    return Status::InvalidArgument("reference " + row.label +
                                   " found no safe setting on the calibration seeds; an unsafe "
                                   "fixed setting is never a reference");
  }
  return Status::Ok();
}

// The reference row (EvalRequest::reference); InvalidArgument when it is named but absent,
// or when it reports that its calibration found no safe setting.
Result<int> find_reference(const EvalRequest& req, const EvalReport& report) {
  int i = -1;
  if (req.reference.empty()) {
    i = report.find("static");
  } else {
    for (size_t c = 0; c < report.controllers.size() && i < 0; ++c) {
      if (report.controllers[c].label == req.reference) i = static_cast<int>(c);
    }
    if (i < 0) i = report.find(req.reference);
    if (i < 0) {
      return Status::InvalidArgument("--reference " + req.reference +
                                     ": no such controller in --controllers");
    }
  }
  if (i < 0) return -1;
  FW_RETURN_IF_ERROR(check_safe_reference(report.controllers[i]));
  return i;
}

// The energy baseline's index in `specs` (EvalRequest::energy_vs), appending "uncontrolled"
// to specs when it is asked for and absent; -1 when none is asked.
Result<int> energy_baseline(const EvalRequest& req, std::vector<ControllerSpec>& specs) {
  if (req.energy_vs.empty()) return -1;
  for (size_t c = 0; c < specs.size(); ++c) {
    if (specs[c].text == req.energy_vs) return static_cast<int>(c);
  }
  for (size_t c = 0; c < specs.size(); ++c) {
    if (specs[c].name == req.energy_vs) return static_cast<int>(c);
  }
  if (req.energy_vs != "uncontrolled") {
    return Status::InvalidArgument("--energy-vs " + req.energy_vs +
                                   ": no such controller in --controllers (or: uncontrolled)");
  }
  FW_ASSIGN_OR_RETURN(ControllerSpec spec, parse_controller_spec("uncontrolled"));
  specs.push_back(spec);
  return static_cast<int>(specs.size() - 1);
}

// Energy saved, throughput lost and EDP change of `row` against `base`, seed by seed, on
// completed-step tokens (score_against, eval/cap_episode.hpp).
void add_energy_vs(const std::vector<EpisodeResult>& base, ControllerSummary& row) {
  std::vector<double> saved, lost, edp;
  for (size_t s = 0; s < base.size() && s < row.episodes.size(); ++s) {
    const EpisodeResult& e = row.episodes[s];
    const CapScore sc = score_against({e.energy_j, e.completed_tokens, e.duration_s},
                                      {base[s].energy_j, base[s].completed_tokens, e.duration_s});
    saved.push_back(sc.energy_saved);
    lost.push_back(sc.throughput_lost);
    edp.push_back(sc.edp_change);
  }
  row.energy_saved = stat_of(saved);
  row.throughput_lost = stat_of(lost);
  row.edp_change = stat_of(edp);
}

}  // namespace

ControllerSummary summarise(const std::vector<EpisodeResult>& episodes,
                            const std::vector<double>& windows_s, const PlantInfo& info,
                            const CostOptions& cost) {
  ControllerSummary row;
  std::vector<double> tok, en, tpm, inter, power, share, ratio, slide, offset, done, sph, tps, stv;
  std::vector<std::vector<double>> viol(windows_s.size());
  std::vector<WindowStats> pooled(windows_s.size());
  const double nameplate_w = info.nameplate_w();
  for (const EpisodeResult& r : episodes) {
    tok.push_back(r.tokens);
    en.push_back(r.energy_j);
    tpm.push_back(r.tokens_per_mwh);
    inter.push_back(static_cast<double>(r.limiter.total()));
    power.push_back(r.mean_power_w);
    slide.push_back(r.sliding_violation_rate);
    offset.push_back(r.offset_violation_rate);
    done.push_back(r.completed_tokens);
    sph.push_back(r.duration_s > 0 ? r.completed_steps * 3600 / r.duration_s : 0);
    tps.push_back(r.completed_steps > 0 ? r.completed_tokens / r.completed_steps : 0);
    stv.push_back(r.steps_judged > 0
                      ? static_cast<double>(r.steps_violating) / static_cast<double>(r.steps_judged)
                      : 0);
    for (size_t w = 0; w < viol.size(); ++w) {
      viol[w].push_back(r.violation_rate[w]);
      pooled[w].window_s = windows_s[w];
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
  row.offset_violation_rate = stat_of(offset);
  row.completed_tokens = stat_of(done);
  row.steps_per_hour = stat_of(sph);
  row.tokens_per_step = stat_of(tps);
  row.steps_violating = stat_of(stv);
  row.peak_share_of_nameplate = stat_of(share);
  row.oversubscription_ratio = stat_of(ratio);
  CostInputs ci;
  ci.energy_j = row.energy_j.mean;
  ci.mean_power_w = stat_of(power).mean;
  ci.tokens = row.tokens.mean;
  ci.nameplate_per_gpu_w = info.gpus.empty() ? kUnset : nameplate_w / info.gpus.size();
  ci.oversubscription_ratio = row.oversubscription_ratio.mean;
  row.cost = cost_report(ci, cost);
  return row;
}

namespace {

// The actuators static's joint search covers for a claim set, in static's order (knobs by
// index, then caps): only knobs some job exposes. "" when the set names none of them.
std::string searched_names(const ActuatorSet& claims, const PlantInfo& info) {
  std::string names;
  for (int i = 0; i < kNumActuators; ++i) {
    if (!claims.test(static_cast<size_t>(i)) || i == kCapActuator) continue;
    bool exposed = false;
    for (const JobInfo& j : info.jobs) exposed = exposed || j.knob_ranges[i].available;
    if (exposed) names += (names.empty() ? "" : "+") + Actuator::of_index(i).name();
  }
  if (claims.test(kCapActuator)) names += (names.empty() ? "" : "+") + std::string("caps");
  return names;
}

// --reference auto: each row's reference is the joint static over the actuators its
// controller claims (a row claiming none: over every actuator, plain `static`). A listed
// calibrated static without pins that searched exactly that set serves; otherwise the spec is
// appended to `specs` (and prepared) as an extra row. Fills row_ref (one per row of specs as
// given, then the appended rows, which are their own reference) and row_claims (the "+"-joined
// actuator names each row's reference covers; the appended rows' own).
Status auto_references(const registry::ControllerEnv& env, uint64_t seed,
                       std::vector<ControllerSpec>& specs,
                       std::vector<registry::PreparedController>& prepared,
                       std::vector<int>& row_ref, std::vector<std::string>& row_claims,
                       std::vector<double>& prepare_s) {
  const std::string all = searched_names(all_actuators(), env.info);
  auto serves = [&](size_t c, const std::string& names) {
    const nlohmann::json& n = prepared[c].notes;
    return specs[c].name == "static" && !n.contains("hold") && n.contains("searched") &&
           n["searched"] == names;
  };
  const size_t n_rows = specs.size();
  row_ref.assign(n_rows, -1);
  row_claims.assign(n_rows, "");
  for (size_t c = 0; c < n_rows; ++c) {
    std::unique_ptr<Controller> ctrl = prepared[c].make(seed);
    std::string names = ctrl ? searched_names(ctrl->claims(), env.info) : "";
    if (names.empty()) names = all;
    row_claims[c] = names;
    int r = -1;
    for (size_t k = 0; k < specs.size() && r < 0; ++k) {
      if (serves(k, names)) r = static_cast<int>(k);
    }
    if (r < 0) {
      FW_ASSIGN_OR_RETURN(ControllerSpec spec,
                          parse_controller_spec(names == all ? "static" : "static:knob=" + names));
      const auto t0 = std::chrono::steady_clock::now();
      auto p = registry::prepare_controller(spec, env);
      if (!p.ok()) return p.status().with_context("--reference auto for " + specs[c].text);
      prepare_s.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      specs.push_back(spec);
      prepared.push_back(std::move(p).value());
      r = static_cast<int>(specs.size() - 1);
      if (!serves(r, names)) {
        return Status::Internal("--reference auto: " + spec.text + " did not search " + names);
      }
    }
    row_ref[c] = r;
  }
  for (size_t c = n_rows; c < specs.size(); ++c) {
    row_ref.push_back(static_cast<int>(c));
    row_claims.push_back(prepared[c].notes.value("searched", std::string()));
  }
  return Status::Ok();
}

// The actuators a fixed static row sets ("+"-separated names: what it searched, its pins, a
// given value's actuator); empty when the row is not one fixed setting (a schedule, a
// recalibration, per-level settings).
std::vector<std::string> fixed_setting_actuators(const ControllerSummary& row) {
  const nlohmann::json& n = row.notes;
  if (row.name != "static" || n.contains("schedule") || n.contains("levels")) return {};
  std::vector<std::string> out;
  auto add = [&](const std::string& joined) {
    size_t b = 0;
    while (b <= joined.size()) {
      const size_t e = std::min(joined.find('+', b), joined.size());
      if (e > b) out.push_back(joined.substr(b, e - b));
      b = e + 1;
    }
  };
  if (n.contains("searched") && n["searched"].is_string()) add(n["searched"].get<std::string>());
  if (n.contains("actuator") && n["actuator"].is_string()) add(n["actuator"].get<std::string>());
  if (n.contains("hold") && n["hold"].is_object()) {
    for (const auto& [k, v] : n["hold"].items()) out.push_back(k);
  }
  return out;
}

// --reference auto, second pass (on the evaluation seeds, after every row ran): a row that is
// not itself a static gets, in place of the joint static searched on the calibration seeds,
// the listed fixed setting over a subset of the same actuators that made the most step tokens
// at no more offset-averaged violations than the searched one, when one made more. The joint
// search keeps the best point on two calibration seeds; a listed corner of the same grid can
// beat it on the evaluation seeds. Choosing with hindsight only ever strengthens the baseline,
// so a controller's margin against it is never overstated. Returns the rows whose reference
// moved (row -> the searched static it replaced) for the notes.
std::vector<std::pair<size_t, int>> strongest_listed_references(
    const std::vector<ControllerSpec>& specs, const std::vector<std::string>& row_claims,
    EvalReport& report) {
  std::vector<std::pair<size_t, int>> moved;
  for (size_t c = 0; c < report.controllers.size() && c < row_claims.size(); ++c) {
    if (specs[c].name == "static") continue;
    const int searched = report.row_reference[c];
    if (searched < 0) continue;
    const std::string claims = "+" + row_claims[c] + "+";
    int best = searched;
    for (size_t k = 0; k < report.controllers.size(); ++k) {
      const ControllerSummary& cand = report.controllers[k];
      const std::vector<std::string> acts = fixed_setting_actuators(cand);
      if (acts.empty() || !check_safe_reference(cand).ok()) continue;
      bool within = true;
      for (const std::string& a : acts)
        within = within && claims.find("+" + a + "+") != std::string::npos;
      const ControllerSummary& b = report.controllers[best];
      if (within &&
          cand.offset_violation_rate.mean <=
              report.controllers[searched].offset_violation_rate.mean &&
          cand.completed_tokens.mean > b.completed_tokens.mean) {
        best = static_cast<int>(k);
      }
    }
    if (best != searched) {
      moved.emplace_back(c, searched);
      report.row_reference[c] = best;
    }
  }
  return moved;
}

}  // namespace

Result<EvalReport> run_evaluation(const EvalRequest& req, const ProgressFn& progress,
                                  const PrepareFn& prepare) {
  if (req.seeds.empty()) return Status::InvalidArgument("no evaluation seeds");
  FW_ASSIGN_OR_RETURN(registry::ControllerEnv env, make_env(req));
  const auto wall0 = std::chrono::steady_clock::now();
  std::vector<ControllerSpec> specs = req.specs;
  std::vector<registry::PreparedController> prepared;
  std::vector<double> prepare_s;
  for (const ControllerSpec& spec : specs) {
    if (prepare) prepare(prepared.size(), specs.size(), spec.text);
    const auto t0 = std::chrono::steady_clock::now();
    auto p = registry::prepare_controller(spec, env);
    if (!p.ok()) return p.status();
    prepared.push_back(std::move(p).value());
    prepare_s.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<int> row_ref;
  std::vector<std::string> row_claims;
  const bool auto_ref = req.reference == "auto";
  if (auto_ref) {
    FW_RETURN_IF_ERROR(
        auto_references(env, req.seeds.front(), specs, prepared, row_ref, row_claims, prepare_s));
  }
  const size_t n_rows = specs.size();  // the rows: the listed specs, then auto references
  FW_ASSIGN_OR_RETURN(const int i_energy, energy_baseline(req, specs));
  if (i_energy >= static_cast<int>(prepared.size())) {
    auto p = registry::prepare_controller(specs[i_energy], env);
    if (!p.ok()) return p.status();
    prepared.push_back(std::move(p).value());
  }
  FW_ASSIGN_OR_RETURN(std::vector<EpisodeResult> results,
                      run_episodes(req, specs, env, prepared, progress));
  EvalReport report;
  report.calibration_seeds = env.calibration_seeds;
  report.windows_s = req.windows_s;
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const size_t ns = req.seeds.size();
  for (size_t c = 0; c < n_rows; ++c) {
    const std::vector<EpisodeResult> episodes(results.begin() + c * ns,
                                              results.begin() + (c + 1) * ns);
    ControllerSummary row = summarise(episodes, req.windows_s, env.info, req.cost);
    row.label = specs[c].text;
    row.name = specs[c].name;
    row.notes = prepared[c].notes;
    row.prepare_s = prepare_s[c];
    double dec_s = 0, n_dec = 0;
    DecisionCost cost;
    for (const EpisodeResult& e : episodes) {
      dec_s += e.decision_wall_s;
      n_dec += static_cast<double>(e.decisions);
      cost.merge(e.decision_cost);
    }
    row.decisions = n_dec;
    row.decision_us = n_dec > 0 ? dec_s / n_dec * 1e6 : 0;
    row.decision_max_us = cost.wall_max_s * 1e6;
    row.decision_p99_us = cost.wall_quantile_s(0.99) * 1e6;
    row.decision_cpu_us = cost.cpu_mean_s() * 1e6;
    row.decision_cpu_max_us = cost.cpu_max_s * 1e6;
    row.decision_cpu_p99_us = cost.cpu_quantile_s(0.99) * 1e6;
    if (i_energy >= 0) {
      add_energy_vs({results.begin() + i_energy * ns, results.begin() + (i_energy + 1) * ns}, row);
    }
    if (prepared[c].finish) prepared[c].finish(row.notes);
    report.controllers.push_back(std::move(row));
  }
  if (i_energy >= 0) report.energy_vs = specs[i_energy].text;
  report.duration_s = req.scenario.duration_s;
  if (auto_ref) {
    report.auto_reference = true;
    report.row_reference = row_ref;
    for (size_t c = 0; c < report.controllers.size(); ++c) {
      FW_RETURN_IF_ERROR(check_safe_reference(report.controllers[row_ref[c]]));
    }
    for (const auto& [row, searched] : strongest_listed_references(specs, row_claims, report)) {
      report.controllers[row].notes["reference_searched"] = report.controllers[searched].label;
      report.controllers[row].notes["reference_rule"] =
          "the listed fixed setting of a subset of this row's actuators that made more step "
          "tokens than the searched joint static at no more offset-averaged violations on the "
          "evaluation seeds (a hindsight choice: it only strengthens the reference)";
    }
  } else {
    FW_ASSIGN_OR_RETURN(report.reference, find_reference(req, report));
  }
  return report;
}

namespace {

// `flexwatt eval --json`'s top-level "energy_vs" (EvalRequest::energy_vs): the formulas.
nlohmann::json energy_vs_description(const std::string& reference) {
  return {{"reference", reference},
          {"per", "seed (the reference's episode on the same seed)"},
          {"tokens", "completed-step tokens"},
          {"energy_saved", "1 - (E/N)/(E0/N0): GPU energy per completed-step token"},
          {"throughput_lost", "1 - N/N0"},
          {"edp_change", "(1 - energy_saved)/(1 - throughput_lost) - 1"},
          {"board_vs_gpu", "same: the simulator models GPU board power only (no host power)"}};
}

nlohmann::json energy_vs_row(const ControllerSummary& r) {
  return {{"energy_saved", eval::to_json(r.energy_saved)},
          {"throughput_lost", eval::to_json(r.throughput_lost)},
          {"edp_change", eval::to_json(r.edp_change)}};
}

}  // namespace

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
  if (!energy_vs.empty()) out["energy_vs"] = energy_vs_description(energy_vs);
  const int i_oracle = find_lookahead();
  out["reference"] = auto_reference   ? nlohmann::json("auto")
                     : reference >= 0 ? nlohmann::json(controllers[reference].label)
                                      : nullptr;
  out["lookahead"] = i_oracle >= 0 ? nlohmann::json(controllers[i_oracle].label) : nullptr;
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
      // A window longer than the run was never judged: null, not 0.
      const nlohmann::json v =
          windows_s[w] > duration_s ? nlohmann::json(nullptr) : eval::to_json(r.violation_rate[w]);
      if (is_headline_window(windows_s[w])) viol[window_key(windows_s[w])] = v;
      curve["windows_s"].push_back(windows_s[w]);
      curve["violation_rate"].push_back(v);
    }
    const double shortest = r.curve.shortest_holding_window_s;
    curve["shortest_holding_window_s"] =
        std::isfinite(shortest) ? nlohmann::json(shortest) : nlohmann::json(nullptr);
    nlohmann::json j = {{"name", r.label},
                        {"tokens", eval::to_json(r.tokens)},
                        {"energy_j", eval::to_json(r.energy_j)},
                        {"tokens_per_mwh", eval::to_json(r.tokens_per_mwh)},
                        {"violation_rate", viol},
                        {"violation_rate_sliding",
                         {{"window_s", req.scenario.budget.entries.front().budget.window_s},
                          {"rate", eval::to_json(r.sliding_violation_rate)}}},
                        {"violation_rate_offsets",
                         {{"window_s", req.scenario.budget.entries.front().budget.window_s},
                          {"offsets", kWindowOffsets},
                          {"rate", eval::to_json(r.offset_violation_rate)}}},
                        {"progress",
                         {{"completed_step_tokens", eval::to_json(r.completed_tokens)},
                          {"steps_per_hour", eval::to_json(r.steps_per_hour)},
                          {"tokens_per_step", eval::to_json(r.tokens_per_step)}}},
                        {"steps_violating", eval::to_json(r.steps_violating)}};
    const int i_static = reference_of(c);
    j["reference"] = i_static >= 0 ? nlohmann::json(controllers[i_static].label) : nullptr;
    if (i_static >= 0) {
      const ControllerSummary& s = controllers[i_static];
      j["vs_reference"] = {
          {"completed_step_tokens", ratio_json(r.completed_tokens.mean, s.completed_tokens.mean)},
          {"tokens", ratio_json(r.tokens.mean, s.tokens.mean)},
          {"tokens_per_mwh", ratio_json(r.tokens_per_mwh.mean, s.tokens_per_mwh.mean)},
          {"violation_rate_30",
           ratio_json(r.violation_rate[i30].mean, s.violation_rate[i30].mean)}};
    } else {
      j["vs_reference"] = nullptr;
    }
    if (i_oracle >= 0) {
      j["vs_lookahead"] = {
          {"completed_step_tokens",
           ratio_json(r.completed_tokens.mean, controllers[i_oracle].completed_tokens.mean)}};
    } else {
      j["vs_lookahead"] = nullptr;
    }
    j["limiter_interventions"] = eval::to_json(r.interventions);
    j["windows_curve"] = curve;
    j["oversubscription"] = {{"window_s", kNodeWindowS},
                             {"tolerance", 0.0},
                             {"peak_share_of_nameplate", eval::to_json(r.peak_share_of_nameplate)},
                             {"ratio", eval::to_json(r.oversubscription_ratio)}};
    j["cost"] = cost_report_json<nlohmann::json>(r.cost);
    if (!r.notes.empty()) j["notes"] = r.notes;
    if (!energy_vs.empty()) j["energy_vs"] = energy_vs_row(r);
    out["controllers"].push_back(j);
  }
  return out;
}

}  // namespace fw::eval
