// flexwatt train --imitate TEACHER: a level-action policy distilled from a teacher controller
// (rl_train/imitation_session.hpp, docs/rl.md "Imitation of a planner"). Reached from train.cpp.

#include <cstdio>
#include <string>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "rl_train/imitation_session.hpp"
#include "rl_train/training.hpp"

namespace fw::cli {

void add_imitate_flags(CLI::App& app, fw::rl::ImitateRequest& im, std::string& teacher) {
  app.add_option("--imitate", teacher,
                 "instead of PPO, distil a teacher controller (a registry spec, e.g. mpc or "
                 "mpc:replan_s=300) into a level-action policy: the teacher drives episodes drawn "
                 "as training draws them (training plant seeds), its setting at each decision is "
                 "the label, the PPO actor's network is fitted by cross-entropy per action head "
                 "(needs --actions level; --iterations, --resume and the reward flags do not "
                 "apply)");
  app.add_option("--teacher-episodes", im.episodes, "with --imitate: teacher-driven episodes")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--dagger-rounds", im.dagger_rounds,
                 "with --imitate: DAgger rounds (the student drives, the teacher labels, the "
                 "union is refitted)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  app.add_option("--dagger-episodes", im.dagger_episodes, "with --imitate: episodes per round")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--fit-epochs", im.fit.epochs, "with --imitate: epochs of the fit")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  app.add_option("--fit-batch", im.fit.batch, "with --imitate: minibatch size of the fit")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--holdout-every", im.fit.holdout_every,
                 "with --imitate: every Nth episode is held out of the fit (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--dataset", im.dataset_csv,
                 "with --imitate: write the decisions (episode, observation, labels) as CSV")
      ->check(output_file());
}

int run_imitate(const std::string& teacher, fw::rl::ImitateRequest im,
                const fw::rl::TrainRequest& r, bool json, bool quiet) {
  im.teacher = teacher;
  im.train = r;
  im.fit.lr = r.ppo.adam.lr;
  im.fit.seed = static_cast<uint64_t>(r.seed);
  Progress progress("train", progress_wanted(quiet));
  auto s = fw::rl::run_imitation(im, [&](const fw::rl::ImitateProgress& p) {
    char b[160];
    std::snprintf(b, sizeof b, "%s episode %d/%d  samples %ld  %.0f s",
                  p.round == 0 ? "teacher" : ("dagger " + std::to_string(p.round)).c_str(),
                  p.episode, p.episodes, p.samples, p.wall_s);
    progress.show(b);
  });
  progress.finish(true);
  if (!s.ok()) return fail("train", s.status());
  if (json) {
    std::printf("%s\n", s->to_json().dump(2).c_str());
  } else {
    const auto& f = s->report;
    std::printf(
        "flexwatt train --imitate %s — SIMULATED %s: %d episodes, %ld decisions\n"
        "rollouts %.1f s CPU, fit %.1f s CPU\n"
        "held-out decisions equal to the teacher's (every factor): %s, loss %s\n"
        "policy %s  log %s\n",
        teacher.c_str(), s->scenario_name.c_str(), s->episodes, s->samples, s->rollout_cpu_s,
        s->fit_cpu_s, f.value("holdout_exact", nlohmann::json()).dump().c_str(),
        f.value("holdout_loss", nlohmann::json()).dump().c_str(), s->policy.c_str(),
        s->log.c_str());
  }
  return 0;
}

}  // namespace fw::cli
