#pragma once
// An imitation session (`flexwatt train --imitate TEACHER`, docs/rl.md "Imitation of a
// planner"): a teacher controller of the registry (e.g. mpc) drives episodes drawn exactly as
// `flexwatt train` draws them (the same PlantEnv randomisation, family, curves and budget
// steps, on training plant seeds >= 2^41), a TeacherRecorder (rl/teacher_recorder.hpp) keeps
// (observation, the teacher's setting as a level action) at each of the student's decisions,
// and fit_imitation() (rl/imitation.hpp) fits the PPO actor's network to them. Optional
// DAgger rounds: the student drives new episodes, the teacher labels them, the union is
// refitted. Writes the policy (a `ppo:` file, metadata.imitation says how it was made), with
// DAgger rounds each earlier round's policy as <out without .json>.round<k>.json, and a CSV
// with one row per round and epoch.
//
// Episodes run one after another on the calling thread (the teacher may use its own threads:
// mpc's off-thread search). Deterministic for a seed.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.hpp"
#include "rl/imitation.hpp"
#include "rl_train/training.hpp"

namespace fw::rl {

struct ImitateRequest {
  // The scenario(s), overrides, out, log path, seed, decision period, episode length, knobs,
  // budget jitter and family flags of `flexwatt train`; actions must be "level" and decide_on
  // "period" (InvalidArgument otherwise). The PPO-only fields are ignored.
  TrainRequest train;
  std::string teacher = "mpc";  // a controller spec of the registry
  int episodes = 40;            // teacher-driven episodes
  int dagger_rounds = 0;        // rounds where the student drives and the teacher labels
  int dagger_episodes = 16;     // episodes per round
  ImitationConfig fit;
  std::string dataset_csv;  // non-empty: every (episode, round, observation, label) row written
};

struct ImitateProgress {
  int round = 0;  // 0: teacher rollouts; k: DAgger round k
  int episode = 0, episodes = 0;
  long samples = 0;
  double wall_s = 0;
};

struct ImitateSummary {
  std::string policy, log, scenario_name;
  long samples = 0;
  int episodes = 0;                                     // all rounds
  double rollout_cpu_s = 0, fit_cpu_s = 0, wall_s = 0;  // process CPU (teacher threads in it)
  nlohmann::json report;                                // the last fit's ImitationReport::to_json()
  nlohmann::json to_json() const;
};

Result<ImitateSummary> run_imitation(
    const ImitateRequest& req, const std::function<void(const ImitateProgress&)>& progress = {});

}  // namespace fw::rl
