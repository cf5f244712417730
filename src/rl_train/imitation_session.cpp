#include "rl_train/imitation_session.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>

#include "control/control_loop.hpp"
#include "control/controller_spec.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"
#include "registry/controller_registry.hpp"
#include "rl/plant_env.hpp"
#include "rl/ppo_controller.hpp"
#include "rl/teacher_recorder.hpp"
#include "rl_train/training_setup.hpp"
#include "sim/scenario.hpp"

namespace fw::rl {
namespace {

double cpu_s() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// What `flexwatt eval` gives a controller for a scenario (eval/evaluation.cpp make_env): the
// declared scenario (mpc's twin starts from it), plants for calibration, the calibration seeds
// 1000001-2 (never a training or evaluation plant seed).
Result<registry::ControllerEnv> controller_env(std::shared_ptr<const sim::Scenario> sc,
                                               const PlantInfo& info) {
  registry::ControllerEnv env;
  env.info = info;
  env.budget = sc->budget;
  env.sample_period_s = sc->sample_period_s;
  env.duration_s = sc->duration_s;
  env.make_plant = [sc](uint64_t seed) { return sim::make_plant(*sc, seed); };
  env.declared = sc;
  env.make_plant_at = [sc](double t0_s) -> PlantFactory {
    auto shifted = std::make_shared<sim::Scenario>(sim::shifted_to(*sc, t0_s));
    return [shifted](uint64_t seed) { return sim::make_plant(*shifted, seed); };
  };
  env.calibration_seeds = {1000001, 1000002};
  return env;
}

struct Rollouts {
  const ImitateRequest& req;
  const TrainSetup& setup;
  const ControllerSpec& teacher;
  std::unique_ptr<PlantEnv> drawer;  // draws each episode as PlantEnv::reset() would
  int next_episode = 0;
};

// One episode (index e of the session): drawn, run with the teacher (and the student driving
// when `student` is set), its decisions appended to `data`.
Status run_episode(Rollouts& ro, const Policy* student, ImitationDataset& data) {
  const int e = ro.next_episode++;
  const TrainRequest& r = ro.req.train;
  Rng seeds = Rng::stream(static_cast<uint64_t>(r.seed), "imitate.episode").child(e);
  const uint64_t reset_seed = seeds.next_u64();
  std::vector<double> obs(kPlantObsDim);
  FW_RETURN_IF_ERROR(ro.drawer->reset(reset_seed, obs));
  const PlantEnvConfig& ec = ro.setup.ec;
  const uint64_t plant_seed = ec.plant_seed_base + reset_seed % ec.plant_seed_base;
  const size_t m = ro.drawer->member();
  const std::string& path = m == 0 ? r.scenario_path : r.family[m - 1];
  std::vector<std::string> sets = r.sets;
  for (const auto& o : ro.drawer->overrides()) sets.push_back(o);
  FW_ASSIGN_OR_RETURN(sim::Scenario sc, sim::load_scenario(path, sets));
  sc.budget = ro.drawer->episode_budget();
  sc.duration_s = r.episode_s;
  auto scp = std::make_shared<const sim::Scenario>(std::move(sc));
  auto plant = sim::make_plant(*scp, plant_seed);
  if (!plant) return Status::Internal("imitate: could not build the simulated plant");
  FW_ASSIGN_OR_RETURN(registry::ControllerEnv cenv, controller_env(scp, plant->info()));
  FW_ASSIGN_OR_RETURN(registry::PreparedController prepared,
                      registry::prepare_controller(ro.teacher, cenv));
  std::unique_ptr<Controller> teacher = prepared.make(plant_seed);
  std::unique_ptr<PpoController> driver;
  if (student) {
    FW_ASSIGN_OR_RETURN(driver, PpoController::create(*student, r.decision_period_s));
  }
  TeacherRecorder::Config rc;
  rc.student_period_s = r.decision_period_s;
  rc.knob_mask = ro.setup.mask;
  rc.episode = e;
  TeacherRecorder rec(*teacher, driver.get(), rc, data);
  LoopConfig lc;
  lc.sample_period_s = scp->sample_period_s;
  lc.duration_s = scp->duration_s;
  ControlLoop loop(*plant, scp->budget, lc, cenv.limiter);
  loop.add_controller(&rec);
  FW_RETURN_IF_ERROR(loop.run());
  rec.finish();
  return Status::Ok();
}

nlohmann::json fit_json(const ImitationConfig& f) {
  return {{"hidden", f.hidden},
          {"epochs", f.epochs},
          {"batch", f.batch},
          {"lr", f.lr},
          {"max_grad_norm", f.max_grad_norm},
          {"holdout_every", f.holdout_every},
          {"seed", f.seed}};
}

}  // namespace

nlohmann::json ImitateSummary::to_json() const {
  return {{"policy", policy},       {"log", log},           {"scenario", scenario_name},
          {"samples", samples},     {"episodes", episodes}, {"rollout_cpu_s", rollout_cpu_s},
          {"fit_cpu_s", fit_cpu_s}, {"wall_s", wall_s},     {"fit", report},
          {"simulated", true}};
}

Result<ImitateSummary> run_imitation(const ImitateRequest& req,
                                     const std::function<void(const ImitateProgress&)>& progress) {
  const TrainRequest& r = req.train;
  if (r.actions != "level") {
    return Status::InvalidArgument(
        "--imitate: needs --actions level (a teacher's setting is a level)");
  }
  if (r.decide_on != "period") {
    return Status::InvalidArgument("--imitate: needs --decide-on period");
  }
  if (!r.resume.empty()) return Status::InvalidArgument("--imitate: --resume is not supported");
  if (req.episodes < 1 || req.dagger_rounds < 0 ||
      (req.dagger_rounds > 0 && req.dagger_episodes < 1)) {
    return Status::InvalidArgument("--imitate: --teacher-episodes >= 1, --dagger-rounds >= 0");
  }
  auto spec = parse_controller_spec(req.teacher);
  if (!spec.ok()) return spec.status().with_context("--imitate");
  {  // the name and options are checked before any episode runs
    bool known = false;
    for (const auto& e : registry::controller_registry()) known |= e.name == spec->name;
    if (!known) {
      return Status::InvalidArgument("--imitate: unknown controller '" + spec->name +
                                     "' (flexwatt eval --list names them)");
    }
  }
  FW_ASSIGN_OR_RETURN(TrainSetup setup, prepare_train_setup(r));
  auto drawer = PlantEnv::create(setup.family, setup.ec);
  if (!drawer.ok()) return drawer.status().with_context(r.scenario_path);
  Rollouts ro{req, setup, *spec, std::move(drawer).value(), 0};

  ImitateSummary out;
  out.scenario_name = setup.scenario.name;
  out.policy = r.out;
  const std::string stem = r.out.size() > 5 && r.out.substr(r.out.size() - 5) == ".json"
                               ? r.out.substr(0, r.out.size() - 5)
                               : r.out;
  out.log = r.log_path.empty() ? stem + ".train.csv" : r.log_path;
  std::FILE* log = std::fopen(out.log.c_str(), "w");
  if (log == nullptr) return Status::IoError("cannot write " + out.log);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log_closer(log, &std::fclose);
  std::fprintf(log, "round,episodes,samples,epoch,train_loss,holdout_loss,holdout_exact");
  for (const auto& n : plant_action_spec(KnobActionMode::kLevel, setup.mask).names) {
    std::fprintf(log, ",holdout_acc_%s", n.c_str());
  }
  std::fprintf(log, ",rollout_cpu_s,fit_cpu_s\n");

  const auto t0 = std::chrono::steady_clock::now();
  const auto wall = [&t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const ActionSpec& aspec = plant_action_spec(KnobActionMode::kLevel, setup.mask);
  nlohmann::json recipe = {{"imitate", req.teacher},
                           {"teacher_episodes", req.episodes},
                           {"dagger_rounds", req.dagger_rounds},
                           {"dagger_episodes", req.dagger_episodes},
                           {"scenario_path", r.scenario_path},
                           {"overrides", r.sets},
                           {"decision_period_s", r.decision_period_s},
                           {"episode_s", r.episode_s},
                           {"budget_jitter", r.budget_jitter},
                           {"actions", r.actions},
                           {"knobs", knob_mask_name(setup.mask)},
                           {"fit", fit_json(req.fit)},
                           {"seed", r.seed}};
  if (nlohmann::json f = train_family_json(r, setup); !f.is_null()) recipe["family"] = f;

  ImitationDataset data;
  std::unique_ptr<Policy> student;
  double rollout_cpu = 0, fit_cpu = 0;
  ImitationReport rep;
  for (int round = 0; round <= req.dagger_rounds; ++round) {
    const int n = round == 0 ? req.episodes : req.dagger_episodes;
    const double c0 = cpu_s();
    for (int i = 0; i < n; ++i) {
      ImitationDataset ep;
      FW_RETURN_IF_ERROR(run_episode(ro, student.get(), ep));
      if (data.categories.empty()) {
        data.obs_dim = ep.obs_dim;
        data.categories = ep.categories;
      }
      data.append(ep);
      ++out.episodes;
      if (progress) progress({round, i + 1, n, static_cast<long>(data.size()), wall()});
    }
    rollout_cpu += cpu_s() - c0;
    const double c1 = cpu_s();
    nlohmann::json meta = train_policy_metadata(r, setup, recipe, ro.drawer->nominal_budget_w());
    meta["imitation"] = {{"teacher", req.teacher},
                         {"rounds", round},
                         {"episodes", out.episodes},
                         {"samples", data.size()},
                         {"labels",
                          "knobs: the level nearest the teacher's commanded value at the "
                          "decision; cap: the highest level at or below the teacher's lowest "
                          "cap until the next decision"}};
    meta.erase("reward");  // no reward: the loss is the cross-entropy to the teacher
    FW_ASSIGN_OR_RETURN(Policy p,
                        fit_imitation(data, plant_obs_spec(), aspec, req.fit, meta, &rep));
    fit_cpu += cpu_s() - c1;
    for (const ImitationEpoch& e : rep.epochs) {
      std::fprintf(log, "%d,%d,%zu,%d,%s,%s,%s", round, out.episodes, data.size(), e.epoch,
                   format_g(e.train_loss, 6).c_str(), format_g(e.holdout_loss, 6).c_str(),
                   format_g(e.holdout_exact, 6).c_str());
      for (double a : e.holdout_accuracy) std::fprintf(log, ",%s", format_g(a, 6).c_str());
      std::fprintf(log, ",%.2f,%.2f\n", rollout_cpu, fit_cpu);
    }
    std::fflush(log);
    if (req.dagger_rounds > 0 && round < req.dagger_rounds) {
      // Each round's student, for comparison: <stem>.round<k>.json (the last one is --out).
      FW_RETURN_IF_ERROR(p.save(stem + ".round" + std::to_string(round) + ".json"));
    }
    student = std::make_unique<Policy>(std::move(p));
  }
  if (!req.dataset_csv.empty()) {
    std::FILE* f = std::fopen(req.dataset_csv.c_str(), "w");
    if (f == nullptr) return Status::IoError("cannot write " + req.dataset_csv);
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f, &std::fclose);
    std::fprintf(f, "episode");
    for (const auto& n : plant_obs_spec().names) std::fprintf(f, ",%s", n.c_str());
    for (const auto& n : aspec.names) std::fprintf(f, ",label_%s", n.c_str());
    std::fprintf(f, "\n");
    const size_t nf = data.categories.size();
    for (size_t i = 0; i < data.size(); ++i) {
      std::fprintf(f, "%d", data.episode[i]);
      for (int k = 0; k < data.obs_dim; ++k) {
        std::fprintf(f, ",%s", format_g(data.obs[i * data.obs_dim + k], 8).c_str());
      }
      for (size_t k = 0; k < nf; ++k) std::fprintf(f, ",%d", data.labels[i * nf + k]);
      std::fprintf(f, "\n");
    }
  }
  nlohmann::json meta = student->metadata();
  meta["imitation"]["fit"] = rep.to_json();
  meta["imitation"]["rollout_cpu_s"] = rollout_cpu;
  meta["imitation"]["fit_cpu_s"] = fit_cpu;
  const Policy final_policy(student->obs_spec(), student->action_spec(), student->actor(),
                            student->theta(), student->normalizer(), meta,
                            student->flexwatt_version());
  FW_RETURN_IF_ERROR(final_policy.save(r.out));
  out.samples = static_cast<long>(data.size());
  out.rollout_cpu_s = rollout_cpu;
  out.fit_cpu_s = fit_cpu;
  out.wall_s = wall();
  out.report = rep.to_json();
  return out;
}

}  // namespace fw::rl
