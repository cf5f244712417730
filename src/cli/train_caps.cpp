// flexwatt train --task caps: the per-GPU cap policy (rl_train/cap_training.hpp,
// docs/caps.md). Reached from train.cpp when --task caps is given.

#include <cstdio>
#include <string>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "rl_train/cap_training.hpp"
#include "rl_train/training.hpp"

namespace fw::cli {

int run_train_caps(int argc, char** argv) {
  CLI::App app(
      "Train capnet, one small MLP shared by every GPU that sets each GPU's power cap every "
      "10 s, for reward = energy saved - alpha x throughput lost against the uncapped run of "
      "the same seed (docs/caps.md). Randomised scenarios from the base one: 1-64 GPUs, "
      "dense/MoE, work imbalance, duty cycles; plant seeds >= 2^41; the policy kept is the "
      "best on validation seeds 500000+.\n\nExample:\n"
      "  flexwatt train --task caps --alpha 0.3 scenarios/caps-pretrain-a100x8.yaml "
      "--out policies/capnet-a100-alpha0.3.json --iterations 250 --threads 1",
      "train");
  fw::rl::CapTrainRequest r;
  std::string task;
  bool json = false;
  app.add_option("--task", task, "caps")->required()->check(CLI::IsMember({"caps"}));
  app.add_option("scenario", r.scenario_path, "base scenario YAML (one pretraining job)")
      ->required();
  app.add_option("--out", r.out, "policy file to write (JSON)")->required()->check(output_file());
  app.add_option("--alpha", r.alpha, "throughput weight: reward = saved - alpha x lost")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--iterations", r.iterations, "ES iterations")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--pairs", r.pairs, "antithetic pairs per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--variants", r.variants, "random scenarios per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--sigma", r.sigma, "parameter noise sd")
      ->capture_default_str()
      ->check(CLI::Range(1e-4, 10.0));
  app.add_option("--lr", r.lr, "Adam learning rate")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 1.0));
  app.add_option("--episode-s", r.episode_s, "training episode length, s")
      ->capture_default_str()
      ->check(CLI::Range(60.0, 86400.0));
  app.add_option("--max-gpus", r.max_gpus, "largest GPU count drawn")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--seed", r.seed, "training seed")->capture_default_str()->check(seed_value());
  app.add_option("--threads", r.threads, "episodes run in parallel")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--validate-every", r.validate_every, "iterations between validations")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--set", r.sets, "override a base scenario parameter (repeatable)");
  app.add_option("--log", r.log_path, "training log CSV (default: OUT without .json + .train.csv)")
      ->check(output_file());
  app.add_flag("--json", json, "print the summary as JSON on stdout");
  bool quiet = false;
  add_quiet_flag(app, quiet);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  r.command_line = "flexwatt";
  for (int i = 0; i < argc; ++i) r.command_line += " " + fw::rl::shell_quote(argv[i]);
  Progress progress("train caps", progress_wanted(quiet));
  auto s = fw::rl::run_cap_training(r, [&](const fw::rl::CapTrainProgress& p) {
    char b[256];
    std::snprintf(b, sizeof b, "iter %d/%d  reward %.4f  validation %.4f  %.0f s", p.iteration,
                  p.iterations, p.mean_reward, p.validation, p.wall_s);
    progress.show(b);
  });
  progress.finish(true);  // the last iteration's line stays
  if (!s.ok()) return fail("train", s.status());
  if (json) {
    std::printf("%s\n", s->to_json().dump(2).c_str());
  } else {
    std::printf(
        "flexwatt train --task caps — SIMULATED: %d iterations, %ld episodes, %.1f s wall\n"
        "best validation reward %.4f (iteration %d)\npolicy %s  log %s\n",
        s->iterations, static_cast<long>(s->episodes), s->wall_s, s->best_validation,
        s->best_iteration, s->policy.c_str(), s->log.c_str());
  }
  return 0;
}

}  // namespace fw::cli
