// flexwatt train: PPO for the meta-controller on a simulated scenario (docs/rl.md).
// Writes the policy file, a training log CSV and a checkpoint to resume from.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/verb.hpp"
#include "core/version.hpp"
#include "rl/plant_env.hpp"
#include "rl/plant_features.hpp"
#include "rl/ppo_trainer.hpp"
#include "sim/scenario.hpp"

namespace fw::cli {
namespace {

// The shipped policy's recipe; every field is a flag below.
struct TrainRecipe {
  int envs = 8;
  double decision_period_s = 5;
  double episode_s = 900;
  double budget_jitter = 0.15;  // budgets drawn in nominal × [1 − j, 1 + j]
};

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return Status::IoError("cannot write " + path);
  f << text;
  f.close();
  if (!f) return Status::IoError("write failed: " + path);
  return Status::Ok();
}

Result<nlohmann::json> read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::NotFound(path + ": cannot open");
  try {
    return nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(path + ": not JSON: " + e.what());
  }
}

std::string csv_num(double v) {
  if (std::isnan(v)) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string shell_quote(const std::string& a) {
  const bool plain = !a.empty() && a.find_first_not_of(
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789_./=:,+-") == std::string::npos;
  if (plain) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int run_train(int argc, char** argv) {
  CLI::App app(
      "Train the PPO meta-controller on a simulated scenario: it reads measured power and "
      "moves the jobs' gen_concurrency and group_size (and, with --knobs ...,power_cap, their "
      "GPUs' power cap) to keep the budget while producing tokens. Writes the policy (weights, "
      "normaliser, specs, scenario family, seed, version), "
      "a training log CSV and a checkpoint (OUT.ckpt.json) that --resume continues from.\n"
      "Training episodes use plant seeds >= 2^41, disjoint from evaluation seeds.\n\nExample:\n"
      "  flexwatt train scenarios/grpo-7b-a100.yaml --iterations 800 --envs 10 --period-s 3 "
      "--actions level --knobs gen_concurrency,group_size,power_cap --violation-penalty 6 "
      "--excess-penalty 40 --margin 0.03 --seed 2 --out policies/grpo-7b-a100.json",
      "train");
  std::string scenario_path, out, log_path, resume;
  std::vector<std::string> sets;
  int iterations = 400, checkpoint_every = 10;
  int64_t seed = 1;
  bool json = false;
  TrainRecipe r;
  rl::PpoConfig pc;
  pc.hidden = {64, 64};
  pc.num_minibatches = 4;
  pc.update_epochs = 10;
  pc.adam.lr = 1e-3;
  pc.loss.ent_coef = 0.01;  // CleanRL's discrete-action default (docs/rl.md)
  double gamma = 0.99;
  app.add_option("scenario", scenario_path, "scenario YAML file")->required();
  app.add_option("--out", out, "policy file to write (JSON)")->required();
  app.add_option("--iterations", iterations, "PPO iterations")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--seed", seed, "training seed (weights, sampling, episode seeds)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 62));
  app.add_option("--resume", resume, "continue from a checkpoint written by an earlier run");
  app.add_option("--log", log_path, "training log CSV (default: OUT without .json + .train.csv)");
  app.add_option("--set", sets, "override a scenario parameter, key.path=value (repeatable)");
  app.add_option("--envs", r.envs, "parallel episodes per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--period-s", r.decision_period_s, "decision period, s")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 600.0));
  app.add_option("--episode-s", r.episode_s, "training episode length, s")
      ->capture_default_str()
      ->check(CLI::Range(10.0, 86400.0));
  app.add_option("--budget-jitter", r.budget_jitter, "budgets drawn in nominal x [1-j, 1+j]")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.9));
  double violation_penalty = 12;
  app.add_option("--violation-penalty", violation_penalty,
                 "reward lost per budget window above budget (reward unit: 1000 tokens)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  double excess_penalty = -1, margin = 0;
  app.add_option("--excess-penalty", excess_penalty,
                 "reward lost per unit of window mean / budget above 1 - margin "
                 "(default: 10 x --violation-penalty)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--margin", margin,
                 "share of the budget below it where the excess penalty starts (0: only "
                 "violated windows pay it)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.5));
  std::string window_rule = "tumbling";
  app.add_option("--window-rule", window_rule,
                 "how the reward judges budget windows: tumbling (aligned to t = 0, the "
                 "violation rate eval reports first) or sliding (the trailing window at every "
                 "sample, eval's violation_rate_sliding; cannot be gamed by timing)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tumbling", "sliding"}));
  std::string actions = "step";
  app.add_option("--actions", actions,
                 "knob actions: step (down/stay/up one ladder rung) or level (choose a rung of "
                 "the level ladder, every gen_concurrency in 8..16)")
      ->capture_default_str()
      ->check(CLI::IsMember({"step", "level"}));
  std::string knobs = "all";
  app.add_option("--knobs", knobs,
                 "actuators the policy acts on, comma-separated: gen_concurrency, group_size, "
                 "power_cap (one cap for the job's GPUs); all = both knobs. Knobs left out stay "
                 "at the job's configured value, caps at the device default")
      ->capture_default_str();
  std::string decide_on = "period";
  app.add_option("--decide-on", decide_on,
                 "decision rule: period (every --period-s) or phase (at the start of each "
                 "generation phase and each step, at least --period-s apart, at most "
                 "--max-period-s)")
      ->capture_default_str()
      ->check(CLI::IsMember({"period", "phase"}));
  double max_period_s = 60;
  app.add_option("--max-period-s", max_period_s,
                 "with --decide-on phase: longest time between decisions, s")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 3600.0));
  double churn_penalty = 0.02;
  app.add_option("--churn-penalty", churn_penalty,
                 "reward lost per knob moved (reward unit: 1000 tokens)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--minibatches", pc.num_minibatches, "minibatches per epoch")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--ent-coef", pc.loss.ent_coef, "entropy coefficient")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--lr", pc.adam.lr, "Adam learning rate (annealed to 0)")
      ->capture_default_str()
      ->check(CLI::Range(1e-7, 1.0));
  app.add_option("--epochs", pc.update_epochs, "PPO epochs per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--checkpoint-every", checkpoint_every, "iterations between checkpoints")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_flag("--json", json, "print the final summary as JSON on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  pc.gamma = gamma;
  // The command as given, every flag included (argv[0] is the verb), each argument quoted for
  // a POSIX shell when it holds anything beyond [A-Za-z0-9_./=:,+-].
  std::string command_line = "flexwatt";
  for (int i = 0; i < argc; ++i) command_line += " " + shell_quote(argv[i]);
  pc.seed = static_cast<uint64_t>(seed);
  auto knob_mask = rl::parse_knob_mask(knobs);
  if (!knob_mask.ok()) return fail("train", knob_mask.status().with_context("--knobs"));
  if (decide_on == "phase" && max_period_s < r.decision_period_s) {
    return fail("train", Status::InvalidArgument("--max-period-s must be >= --period-s"));
  }

  {  // --out is written after training: check it can be, before training.
    std::error_code ec;
    const std::filesystem::path op(out);
    const std::filesystem::path parent = op.has_parent_path() ? op.parent_path() : ".";
    if (std::filesystem::is_directory(op, ec)) {
      return fail("train", Status::InvalidArgument("--out " + out +
                                                   ": is a directory (give a "
                                                   "file name for the policy)"));
    }
    if (!std::filesystem::is_directory(parent, ec)) {
      return fail("train", Status::InvalidArgument("--out " + out + ": directory " +
                                                   parent.string() + " does not exist"));
    }
  }
  auto base = sim::load_scenario(scenario_path, sets);
  if (!base.ok()) return fail("train", base.status());
  const sim::Scenario scenario = std::move(base).value();
  std::string text;
  {
    std::ifstream f(scenario_path);
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }

  rl::PlantEnvConfig ec;
  ec.sample_period_s = scenario.sample_period_s;
  ec.decision_period_s = r.decision_period_s;
  ec.episode_s = r.episode_s;
  ec.violation_penalty = violation_penalty;
  ec.excess_penalty = excess_penalty >= 0 ? excess_penalty : 10 * violation_penalty;
  ec.penalty_margin = margin;
  ec.window_rule = window_rule == "sliding" ? rl::PlantEnvConfig::WindowRule::kSliding
                                            : rl::PlantEnvConfig::WindowRule::kTumbling;
  ec.action_mode = actions == "level" ? rl::KnobActionMode::kLevel : rl::KnobActionMode::kStep;
  ec.knob_mask = *knob_mask;
  ec.decide_on = decide_on == "phase" ? rl::DecideOn::kPhase : rl::DecideOn::kPeriod;
  ec.max_decision_period_s = max_period_s;
  ec.churn_penalty = churn_penalty;
  ec.budget_scale_lo = 1 - r.budget_jitter;
  ec.budget_scale_hi = 1 + r.budget_jitter;
  // Domain randomisation of the workload (assumption: ranges around the 7B preset's
  // calibration.md §1a completion lengths; other knob start points so every setting is seen).
  bool grpo = !scenario.jobs.empty() && scenario.jobs[0].kind == sim::JobKind::kGrpo;
  if (grpo) {
    const sim::JobSpec& j = scenario.jobs[0];
    const double med = j.grpo.completion_median_tokens, sig = j.grpo.completion_sigma;
    ec.ranges = {{"jobs.0.completion_median_tokens", med * 0.75, med * 1.3, false},
                 {"jobs.0.completion_sigma", std::max(0.1, sig - 0.2), sig + 0.2, false},
                 {"jobs.0.group_size", j.group_size_min, j.group_size_max, true},
                 {"jobs.0.gen_concurrency", j.gen_concurrency_min,
                  std::min(j.gen_concurrency_max, 32.0), true}};
    // A knob the policy does not act on keeps the job's configured value.
    for (int q = 0; q < kNumKnobs; ++q) {  // ranges[3 - q] is knob q's start point
      if (!(ec.knob_mask & (1u << q))) ec.ranges.erase(ec.ranges.begin() + 3 - q);
    }
  }
  const std::vector<std::string> base_sets = sets;
  const std::string scenario_name = scenario_path;
  rl::EpisodeFactory factory = [text, scenario_name, base_sets](
                                   uint64_t plant_seed,
                                   const std::vector<std::string>& ov) -> Result<rl::PlantEpisode> {
    std::vector<std::string> all = base_sets;
    all.insert(all.end(), ov.begin(), ov.end());
    FW_ASSIGN_OR_RETURN(sim::Scenario s, sim::parse_scenario(text, scenario_name, all));
    rl::PlantEpisode ep;
    ep.plant = sim::make_plant(s, plant_seed);
    ep.budget = s.budget;
    return ep;
  };

  std::vector<std::unique_ptr<rl::Env>> envs;
  std::vector<rl::PlantEnv*> plant_envs;
  for (int e = 0; e < r.envs; ++e) {
    auto env = rl::PlantEnv::create(factory, ec);
    if (!env.ok()) return fail("train", env.status().with_context(scenario_path));
    plant_envs.push_back(env->get());
    envs.push_back(std::move(env).value());
  }
  // One rollout = one episode per environment (--decide-on period), so checkpoints fall on
  // episode boundaries and a resumed run continues exactly (docs/rl.md, "Determinism and
  // seeds"); with --decide-on phase episodes cross rollouts (PlantEnv::rollout_steps()).
  pc.num_steps = rl::PlantEnv::rollout_steps(ec);
  while (pc.num_minibatches > 1 && (pc.num_steps * r.envs) % pc.num_minibatches != 0) {
    --pc.num_minibatches;
  }
  pc.anneal_iterations = iterations;

  auto made = rl::PpoTrainer::create(std::move(envs), pc);
  if (!made.ok()) return fail("train", made.status());
  rl::PpoTrainer& trainer = **made;

  const std::string stem =
      out.size() > 5 && out.substr(out.size() - 5) == ".json" ? out.substr(0, out.size() - 5) : out;
  const std::string ckpt_path = stem + ".ckpt.json";
  if (log_path.empty()) log_path = stem + ".train.csv";
  nlohmann::json recipe = {{"scenario_path", scenario_path},
                           {"overrides", sets},
                           {"envs", r.envs},
                           {"decision_period_s", r.decision_period_s},
                           {"episode_s", r.episode_s},
                           {"budget_jitter", r.budget_jitter},
                           {"lr", pc.adam.lr},
                           {"violation_penalty", violation_penalty},
                           {"excess_penalty", ec.excess_penalty},
                           {"margin", margin},
                           {"actions", actions},
                           {"minibatches", pc.num_minibatches},
                           {"ent_coef", pc.loss.ent_coef},
                           {"epochs", pc.update_epochs},
                           {"iterations", iterations},
                           {"seed", seed}};
  // Added only when not the default, so checkpoints from before these options still resume.
  if (*knob_mask != rl::kAllKnobs) recipe["knobs"] = rl::knob_mask_name(*knob_mask);
  if (window_rule != "tumbling") recipe["window_rule"] = window_rule;
  if (decide_on != "period") {
    recipe["decide_on"] = decide_on;
    recipe["max_decision_period_s"] = max_period_s;
  }
  if (churn_penalty != 0.02) recipe["churn_penalty"] = churn_penalty;
  if (!resume.empty()) {
    auto ck = read_json(resume);
    if (!ck.ok()) return fail("train", ck.status());
    if (!ck->contains("trainer") || !ck->contains("recipe")) {
      return fail("train", Status::InvalidArgument(resume + ": not a flexwatt train checkpoint "
                                                            "(fields 'trainer' and 'recipe')"));
    }
    nlohmann::json old = (*ck)["recipe"];
    old.erase("iterations");
    nlohmann::json now = recipe;
    now.erase("iterations");
    if (old != now) {
      return fail("train",
                  Status::InvalidArgument(resume + ": checkpoint was made with other settings: " +
                                          old.dump() + " (now " + now.dump() + ")"));
    }
    const Status rs = trainer.restore((*ck)["trainer"]);
    if (!rs.ok()) return fail("train", rs.with_context(resume));
    if (trainer.iteration() >= iterations) {
      return fail("train", Status::InvalidArgument("--iterations " + std::to_string(iterations) +
                                                   ": " + resume + " is already at iteration " +
                                                   std::to_string(trainer.iteration()) +
                                                   " (give more iterations to continue)"));
    }
  }

  const bool resumed = !resume.empty();
  std::FILE* log = std::fopen(log_path.c_str(), resumed ? "a" : "w");
  if (log == nullptr) return fail("train", Status::IoError("cannot write " + log_path));
  if (!resumed) {
    std::fprintf(log,
                 "iteration,total_steps,episodes,mean_return,violation_rate_window,"
                 "tokens_per_episode,knob_moves_per_episode,approx_kl,entropy,pg_loss,v_loss,"
                 "clip_frac,explained_variance,lr,epochs,wall_s\n");
  }
  const bool tty = stderr_is_tty();
  const auto t0 = std::chrono::steady_clock::now();
  auto save_checkpoint = [&]() -> Status {
    nlohmann::json ck = {{"format", "flexwatt-train-checkpoint"},
                         {"flexwatt_version", kVersion},
                         {"recipe", recipe},
                         {"trainer", trainer.checkpoint()}};
    return write_text(ckpt_path, ck.dump());
  };
  double last_return = kUnset, last_viol = kUnset;
  while (trainer.iteration() < iterations) {
    auto st = trainer.iterate();
    if (!st.ok()) {
      std::fclose(log);
      return fail("train", st.status());
    }
    rl::PlantEpisodeStats tot;
    int eps = 0;
    for (rl::PlantEnv* pe : plant_envs) {
      int n = 0;
      const rl::PlantEpisodeStats s = pe->take_finished(n);
      eps += n;
      tot.tokens += s.tokens;
      tot.windows += s.windows;
      tot.violations += s.violations;
      tot.knob_moves += s.knob_moves;
    }
    const double viol =
        tot.windows > 0 ? static_cast<double>(tot.violations) / tot.windows : kUnset;
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    last_return = st->mean_return;
    last_viol = viol;
    std::fprintf(log, "%d,%ld,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%.2f\n", st->iteration + 1,
                 st->total_steps, st->episodes, csv_num(st->mean_return).c_str(),
                 csv_num(viol).c_str(), csv_num(eps ? tot.tokens / eps : kUnset).c_str(),
                 csv_num(eps ? static_cast<double>(tot.knob_moves) / eps : kUnset).c_str(),
                 csv_num(st->approx_kl).c_str(), csv_num(st->entropy).c_str(),
                 csv_num(st->pg_loss).c_str(), csv_num(st->v_loss).c_str(),
                 csv_num(st->clip_frac).c_str(), csv_num(st->explained_variance).c_str(),
                 csv_num(st->lr).c_str(), st->epochs, wall);
    std::fflush(log);
    if (tty) {
      std::fprintf(stderr,
                   "\rtrain: iter %d/%d  return %8.2f  violations %5.1f %%  KL %.4f  entropy %.3f  "
                   "%.0f s\033[K",
                   st->iteration + 1, iterations, st->mean_return, 100 * viol, st->approx_kl,
                   st->entropy, wall);
    }
    if ((st->iteration + 1) % checkpoint_every == 0 || trainer.iteration() == iterations) {
      const Status cs = save_checkpoint();
      if (!cs.ok()) {
        std::fclose(log);
        return fail("train", cs);
      }
    }
  }
  std::fclose(log);
  if (tty) std::fprintf(stderr, "\n");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  nlohmann::json meta = {{"scenario_family", scenario.name},
                         {"scenario_path", scenario_path},
                         {"overrides", sets},
                         {"simulated", true},
                         {"decision_period_s", r.decision_period_s},
                         {"decide_on", decide_on},
                         {"max_decision_period_s", max_period_s},
                         {"knobs", rl::knob_mask_name(*knob_mask)},
                         {"sample_period_s", ec.sample_period_s},
                         {"gpu_models", nlohmann::json::array()},
                         {"nominal_budget_w", plant_envs.front()->nominal_budget_w()},
                         {"randomization",
                          {{"budget_scale", {ec.budget_scale_lo, ec.budget_scale_hi}},
                           {"plant_seed_base", ec.plant_seed_base},
                           {"ranges", nlohmann::json::array()}}},
                         {"reward",
                          {{"token_scale", ec.token_scale},
                           {"violation_penalty", ec.violation_penalty},
                           {"excess_penalty", ec.excess_penalty},
                           {"penalty_margin", ec.penalty_margin},
                           {"churn_penalty", ec.churn_penalty},
                           {"window_rule", window_rule}}},
                         {"recipe", recipe},
                         {"command", command_line}};
  for (const auto& g : scenario.gpus) meta["gpu_models"].push_back(g.model);
  for (const auto& rr : ec.ranges) {
    meta["randomization"]["ranges"].push_back({{"key", rr.key}, {"lo", rr.lo}, {"hi", rr.hi}});
  }
  const Status ps = trainer.policy(meta).save(out);
  if (!ps.ok()) return fail("train", ps);

  nlohmann::json summary = {
      {"policy", out},
      {"log", log_path},
      {"checkpoint", ckpt_path},
      {"iterations", trainer.iteration()},
      {"total_steps", trainer.total_steps()},
      {"last_mean_return",
       std::isnan(last_return) ? nlohmann::json(nullptr) : nlohmann::json(last_return)},
      {"last_violation_rate",
       std::isnan(last_viol) ? nlohmann::json(nullptr) : nlohmann::json(last_viol)},
      {"wall_s", wall},
      {"simulated", true}};
  if (json) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    std::printf(
        "flexwatt train — SIMULATED %s: %d iterations, %ld steps, %.1f s wall\n"
        "last iteration: mean return %.3f, window violation rate %.2f %%\n"
        "policy %s  log %s  checkpoint %s\n",
        scenario.name.c_str(), trainer.iteration(), trainer.total_steps(), wall, last_return,
        100 * last_viol, out.c_str(), log_path.c_str(), ckpt_path.c_str());
  }
  return 0;
}

FW_VERB("train", "train the PPO meta-controller on a simulated scenario", run_train);

}  // namespace
}  // namespace fw::cli
