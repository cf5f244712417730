#pragma once
// PlantEnv: an rl::Env over a fw::Plant — the PPO meta-controller's training ground.
//
// One episode: a fresh plant and budget from the injected factory (the CLI wires the
// simulator's scenarios in; rl/ does not link sim/), stepped by ControlLoop's own stepping
// core, control/stepper.hpp (tick k at t = k·sample_period_s: read, history, decide,
// SafetyLimiter, write).
// Every decision_period_s the agent sees build_plant_features() for job `job` and picks a
// plant_action_spec() action; the command passes through the same SafetyLimiter (same
// LimiterConfig) as every controller in `flexwatt eval`.
//
// Reward of one decision (docs/rl.md "Plant environment"):
//   tokens produced during the period / token_scale
//   − for every budget window (tumbling, aligned to t = 0, as EpisodeMetrics) that closed
//     during the period: violation_penalty if its mean power is above the budget, plus
//       excess_penalty · max(0, window mean / budget − (1 − penalty_margin))
//     (penalty_margin 0: the excess term counts only violated windows; > 0: it also
//     penalises windows that come within that share of the budget, a continuous signal)
//   − churn_penalty · knobs moved.
// Windows are judged by control/window_judge.hpp (the judge of EpisodeMetrics' sliding rate
// and of the oracle) over the job's budget units.
// With window_rule kSliding the window terms are charged per sample instead: at every sample
// once a full budget window exists, each of the terms above for the trailing window mean,
// divided by the samples per window (a window that stays over for a whole window's length
// costs what one violated tumbling window costs). This is the rule `eval` reports as
// violation_rate_sliding, which timing heavy phases across boundaries cannot dodge;
// episode_stats() then counts judged samples as windows.
//
// Domain randomisation, drawn per episode from the reset seed: the budget scaled uniformly
// in [budget_scale_lo, budget_scale_hi], and every `ranges` entry set to a uniform draw
// (scenario overrides "key=value", e.g. jobs.0.completion_median_tokens). The plant seed is
// plant_seed_base + (reset seed mod plant_seed_base): disjoint from evaluation seeds below it.
//
// Training over a family (docs/rl.md "Training over a family"), each part off by default and
// then drawing nothing, so earlier recipes draw exactly as before. After the draws above, in
// this order: the family member (create() with several factories: one drawn uniformly per
// episode); a completion-length curve (len_curves non-empty: a shape drawn uniformly, its
// factors log-uniform in [len_factor_lo, len_factor_hi], over [0, episode_s], given to the
// factory as the override len_curve_key=[[t, f], ...]); budget steps (max_budget_steps > 0:
// 0..max steps drawn uniformly, at times uniform in [0.15, 0.85] x episode_s, each a factor
// uniform in [budget_step_lo, budget_step_hi] on the episode's first budget; they replace the
// member's schedule from the first step on). The agent learns of a step when it happens: the
// observation is divided by the budget in force, as a controller's.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "control/plant.hpp"
#include "control/safety_limiter.hpp"
#include "control/stepper.hpp"
#include "control/window_judge.hpp"
#include "core/rng.hpp"
#include "rl/env.hpp"
#include "rl/plant_features.hpp"
#include "vocab/budget.hpp"
#include "vocab/command.hpp"

namespace fw::rl {

struct PlantEpisode {
  std::unique_ptr<Plant> plant;
  BudgetSchedule budget;  // non-empty
};
// Builds one episode's plant for a run seed with scenario overrides ("key.path=value").
using EpisodeFactory = std::function<Result<PlantEpisode>(
    uint64_t plant_seed, const std::vector<std::string>& overrides)>;

struct RandomRange {
  std::string key;  // scenario override key, e.g. "jobs.0.completion_median_tokens"
  double lo = 0, hi = 0;
  bool integer = false;
};

// Shapes of a drawn completion-length curve (the drift scenarios' three: growing, U, declining).
enum class LenCurveShape { kGrowing = 0, kU = 1, kDeclining = 2 };
inline constexpr const char* kLenCurveShapeNames[] = {"growing", "u", "declining"};
// "growing,u,declining" (any non-empty subset, comma-separated) -> shapes; InvalidArgument
// naming the unknown shape otherwise.
Result<std::vector<LenCurveShape>> parse_len_curve_shapes(const std::string& csv);

struct PlantEnvConfig {
  double sample_period_s = 0.5;
  double decision_period_s = 5;  // rounded up to whole samples; kPhase: the minimum period
  // kPhase: decide at phase boundaries (at_phase_boundary()) at least decision_period_s
  // apart, and at the latest every max_decision_period_s.
  DecideOn decide_on = DecideOn::kPeriod;
  double max_decision_period_s = 60;
  unsigned knob_mask = kAllKnobs;  // knobs the agent acts on (plant_action_spec())
  double episode_s = 900;
  double history_s = 300;  // as LoopConfig::history_s, so features match eval's
  size_t job = 0;          // the job the agent drives
  double token_scale = 1000;
  double violation_penalty = 4;
  double excess_penalty = 40;
  double penalty_margin = 0;  // share of the budget, 0..1
  enum class WindowRule { kTumbling, kSliding };
  WindowRule window_rule = WindowRule::kTumbling;
  KnobActionMode action_mode = KnobActionMode::kStep;
  double churn_penalty = 0.02;
  LimiterConfig limiter;
  double budget_scale_lo = 1, budget_scale_hi = 1;
  std::vector<RandomRange> ranges;
  uint64_t plant_seed_base = uint64_t{1} << 41;
  // Family randomisation (see the header comment); off by default.
  std::vector<LenCurveShape> len_curves;  // empty: no curve drawn
  double len_factor_lo = 0.5, len_factor_hi = 2.5;
  std::string len_curve_key = "jobs.0.completion_len_curve";
  int max_budget_steps = 0;  // 0: no steps drawn
  double budget_step_lo = 0.85, budget_step_hi = 1.1;
};

// Running totals of the current episode (reset by reset()).
struct PlantEpisodeStats {
  double tokens = 0;
  double energy_j = 0;  // Σ power · dt over the job's budget units
  int windows = 0;      // closed budget windows
  int violations = 0;   // of which above budget
  int knob_moves = 0;
  double budget_w = 0;  // the episode's (randomised) budget at t = 0
};

class PlantEnv : public Env {
 public:
  // Decisions per rollout and environment that `flexwatt train` uses: one whole episode of
  // decisions (kPeriod), so rollouts fall on episode boundaries; with kPhase, where the count
  // varies, one decision per max(decision_period_s, 25 s) of the episode (assumption: 7B's
  // boundaries come about every 25 s), and episodes then cross rollouts.
  static int rollout_steps(const PlantEnvConfig& config);
  // Probes the factory once (seed plant_seed_base, no overrides) for the nominal budget.
  static Result<std::unique_ptr<PlantEnv>> create(EpisodeFactory factory, PlantEnvConfig config);
  // A family of scenarios: one factory per member, each probed once (seed plant_seed_base)
  // for its nominal budget; every member must give a plant with the driven job. One member
  // is drawn per episode (header comment); a single factory draws nothing, as create() above.
  static Result<std::unique_ptr<PlantEnv>> create(std::vector<EpisodeFactory> family,
                                                  PlantEnvConfig config);

  const ObsSpec& obs_spec() const override;
  const ActionSpec& action_spec() const override;
  Status reset(uint64_t seed, std::span<double> obs) override;
  Result<StepResult> step(std::span<const double> action, std::span<double> obs) override;

  const PlantEnvConfig& config() const { return cfg_; }
  const PlantEpisodeStats& episode_stats() const { return stats_; }
  // Totals of the episodes finished (truncated) since the last call, and their count.
  PlantEpisodeStats take_finished(int& episodes);
  // Overrides drawn for the current episode.
  const std::vector<std::string>& overrides() const { return overrides_; }
  double nominal_budget_w() const { return nominal_budget_w_; }
  // The family: members, the member of the current episode, its drawn curve and shape (empty
  // / kGrowing when none is drawn) and its budget schedule (after the drawn steps).
  size_t family_size() const { return factories_.size(); }
  size_t member() const { return member_; }
  const std::vector<std::array<double, 2>>& len_curve() const { return len_curve_; }
  LenCurveShape len_shape() const { return len_shape_; }
  const BudgetSchedule& episode_budget() const { return ep_.budget; }
  // Episodes finished (truncated) so far in this process, per member.
  const std::vector<int>& member_episodes() const { return member_episodes_; }
  // Time of the newest sample, s (the time of the next decision after step()).
  double time_s() const { return stepper_.latest().time_s; }

 private:
  PlantEnv(std::vector<EpisodeFactory> family, PlantEnvConfig config,
           std::vector<double> nominal_budget_w);
  // Senses the stepper's current tick and accounts it (energy, windows). Returns the window
  // penalty.
  Result<double> tick();

  std::vector<EpisodeFactory> factories_;
  PlantEnvConfig cfg_;
  std::vector<double> nominal_w_;  // per member: its first budget entry
  double nominal_budget_w_;        // member 0's
  std::vector<char> schedule_;     // per member: its budget is a schedule (scaled, not overridden)
  size_t member_ = 0;
  std::vector<std::array<double, 2>> len_curve_;
  LenCurveShape len_shape_ = LenCurveShape::kGrowing;
  std::vector<int> member_episodes_;
  int64_t every_ = 1, every_max_ = 1, ticks_ = 1;

  PlantEpisode ep_;
  Stepper stepper_;
  Command cmd_;
  std::vector<std::string> overrides_;
  double last_tokens_ = 0;
  std::vector<int> job_units_;  // budget units the job touches
  WindowJudge judge_;           // per job unit: power / budget, cfg_.window_rule
  PlantEpisodeStats stats_;
  PlantEpisodeStats finished_;
  int finished_episodes_ = 0;
};

}  // namespace fw::rl
