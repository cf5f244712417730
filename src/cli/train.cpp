// flexwatt train: PPO for the meta-controller on a simulated scenario (docs/rl.md).
// Writes the policy file, a training log CSV and a checkpoint to resume from.
// The session is rl_train/training.hpp.

#include <cstdio>
#include <string>
#include <vector>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "rl_train/imitation_session.hpp"
#include "rl_train/training.hpp"

namespace fw::cli {
int run_train_caps(int argc, char** argv);  // cli/train_caps.cpp (--task caps)
// cli/train_imitate.cpp (--imitate TEACHER): its flags, and the run.
void add_imitate_flags(CLI::App& app, fw::rl::ImitateRequest& im, std::string& teacher);
int run_imitate(const std::string& teacher, fw::rl::ImitateRequest im,
                const fw::rl::TrainRequest& r, bool json, bool quiet);
namespace {

// The recipe's flags (what the policy learns from); the rest are in run_train.
void add_recipe_flags(CLI::App& app, fw::rl::TrainRequest& r) {
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
  app.add_option("--violation-penalty", r.violation_penalty,
                 "reward lost per budget window above budget (reward unit: 1000 tokens)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--excess-penalty", r.excess_penalty,
                 "reward lost per unit of window mean / budget above 1 - margin "
                 "(default: 10 x --violation-penalty)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--margin", r.margin,
                 "share of the budget below it where the excess penalty starts (0: only "
                 "violated windows pay it)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--window-rule", r.window_rule,
                 "how the reward judges budget windows: tumbling (aligned to t = 0, the "
                 "violation rate eval reports first) or sliding (the trailing window at every "
                 "sample, eval's violation_rate_sliding; cannot be gamed by timing)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tumbling", "sliding"}));
  app.add_option("--actions", r.actions,
                 "knob actions: step (down/stay/up one ladder rung) or level (choose a rung of "
                 "the level ladder, every gen_concurrency in 8..16)")
      ->capture_default_str()
      ->check(CLI::IsMember({"step", "level"}));
  app.add_option("--knobs", r.knobs,
                 "actuators the policy acts on, comma-separated: gen_concurrency, group_size, "
                 "power_cap (one cap for the job's GPUs); all = both knobs. Knobs left out stay "
                 "at the job's configured value, caps at the device default")
      ->capture_default_str();
  app.add_option("--decide-on", r.decide_on,
                 "decision rule: period (every --period-s) or phase (at the start of each "
                 "generation phase and each step, at least --period-s apart, at most "
                 "--max-period-s)")
      ->capture_default_str()
      ->check(CLI::IsMember({"period", "phase"}));
  app.add_option("--max-period-s", r.max_period_s,
                 "with --decide-on phase: longest time between decisions, s")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 3600.0));
  app.add_option("--churn-penalty", r.churn_penalty,
                 "reward lost per knob moved (reward unit: 1000 tokens)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--len-curves", r.len_curves,
                 "draw a completion-length curve per episode, of one of these shapes "
                 "(comma-separated: growing, u, declining), over the episode; factors on the "
                 "job's median completion length drawn log-uniform in --len-range (default: "
                 "none, lengths as the scenario has them)");
  app.add_option("--len-range", r.len_range,
                 "LO,HI: range of the drawn curve's factors (with --len-curves)")
      ->capture_default_str();
  app.add_option("--budget-steps", r.budget_steps,
                 "draw 0..N unannounced budget steps per episode, at times uniform in "
                 "[0.15, 0.85] x --episode-s (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16));
  app.add_option("--budget-step-range", r.budget_step_range,
                 "LO,HI: each step's budget as a factor on the episode's first budget")
      ->capture_default_str();
  app.add_option("--minibatches", r.ppo.num_minibatches, "minibatches per epoch")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--ent-coef", r.ppo.loss.ent_coef, "entropy coefficient")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--lr", r.ppo.adam.lr, "Adam learning rate (annealed to 0)")
      ->capture_default_str()
      ->check(CLI::Range(1e-7, 1.0));
  app.add_option("--epochs", r.ppo.update_epochs, "PPO epochs per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
}

int run_train(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--task=caps" || (a == "--task" && i + 1 < argc && std::string(argv[i + 1]) == "caps"))
      return run_train_caps(argc, argv);
  }
  CLI::App app(
      "Train the PPO meta-controller on a simulated scenario: it reads measured power and "
      "moves the jobs' gen_concurrency and group_size (and, with --knobs ...,power_cap, their "
      "GPUs' power cap) to keep the budget while producing tokens. Writes the policy (weights, "
      "normaliser, specs, scenario family, seed, version), "
      "a training log CSV and a checkpoint (OUT.ckpt.json) that --resume continues from.\n"
      "Training episodes use plant seeds >= 2^41, disjoint from evaluation seeds.\n\nExample:\n"
      "  flexwatt train scenarios/grpo-7b-a100.yaml --iterations 800 --envs 10 --period-s 3 "
      "--actions level --knobs gen_concurrency,group_size,power_cap --violation-penalty 6 "
      "--excess-penalty 40 --margin 0.03 --seed 2 --out policies/grpo-7b-a100.json\n"
      "Over a family (drift curves and budget steps drawn per episode; docs/rl.md):\n"
      "  flexwatt train scenarios/grpo-7b-a100.yaml --len-curves growing,u,declining "
      "--len-range 0.5,2.5 --budget-steps 2 --budget-step-range 0.85,1.1 --out p.json\n"
      "A policy distilled from the mpc planner (imitation):\n"
      "  flexwatt train scenarios/grpo-7b-a100.yaml --imitate mpc --actions level --period-s 3 "
      "--knobs gen_concurrency,group_size,power_cap --len-curves growing,u,declining "
      "--episode-s 1800 --teacher-episodes 40 --out student.json",
      "train");
  fw::rl::TrainRequest r;
  bool json = false, quiet = false;
  std::vector<std::string> scenarios;
  app.add_option("scenario", scenarios,
                 "scenario YAML file; several make a family, each episode drawing one of them "
                 "with the training seed (same jobs in each)")
      ->required();
  app.add_option("--out", r.out, "policy file to write (JSON)")->required();
  app.add_option("--iterations", r.iterations, "PPO iterations")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--seed", r.seed, "training seed (weights, sampling, episode seeds)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 62));
  app.add_option("--resume", r.resume, "continue from a checkpoint written by an earlier run");
  app.add_option("--log", r.log_path, "training log CSV (default: OUT without .json + .train.csv)")
      ->check(output_file());
  app.add_option("--set", r.sets, "override a scenario parameter, key.path=value (repeatable)");
  add_recipe_flags(app, r);
  app.add_option("--checkpoint-every", r.checkpoint_every, "iterations between checkpoints")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  fw::rl::ImitateRequest im;
  std::string imitate;
  add_imitate_flags(app, im, imitate);
  app.add_flag("--json", json, "print the final summary as JSON on stdout");
  add_quiet_flag(app, quiet);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  r.scenario_path = scenarios.front();
  r.family.assign(scenarios.begin() + 1, scenarios.end());
  // The command as given, every flag included (argv[0] is the verb).
  r.command_line = "flexwatt";
  for (int i = 0; i < argc; ++i) r.command_line += " " + fw::rl::shell_quote(argv[i]);

  if (!imitate.empty()) return run_imitate(imitate, im, r, json, quiet);
  Progress progress("train", progress_wanted(quiet));
  auto s = fw::rl::run_training(r, [&](const fw::rl::TrainProgress& p) {
    char b[256];
    std::snprintf(b, sizeof b,
                  "iter %d/%d  return %8.2f  violations %5.1f %%  KL %.4f  entropy %.3f  %.0f s",
                  p.iteration, p.iterations, p.mean_return, 100 * p.violation_rate, p.approx_kl,
                  p.entropy, p.wall_s);
    progress.show(b);
  });
  progress.finish(true);  // the last iteration's line stays
  if (!s.ok()) return fail("train", s.status());
  if (json) {
    std::printf("%s\n", s->to_json().dump(2).c_str());
  } else {
    std::printf(
        "flexwatt train — SIMULATED %s: %d iterations, %ld steps, %.1f s wall\n"
        "last iteration: mean return %.3f, window violation rate %.2f %%\n"
        "policy %s  log %s  checkpoint %s\n",
        s->scenario_name.c_str(), s->iterations, s->total_steps, s->wall_s, s->last_mean_return,
        100 * s->last_violation_rate, s->policy.c_str(), s->log.c_str(), s->checkpoint.c_str());
  }
  return 0;
}

FW_VERB("train", "train the PPO meta-controller on a simulated scenario", run_train);

}  // namespace
}  // namespace fw::cli
