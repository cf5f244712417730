#include "rl/plant_env.hpp"

#include <algorithm>
#include <cmath>

#include "control/actuator.hpp"
#include "core/format.hpp"
#include "rl/plant_features.hpp"

namespace fw::rl {

Result<std::vector<LenCurveShape>> parse_len_curve_shapes(const std::string& csv) {
  std::vector<LenCurveShape> out;
  size_t start = 0;
  while (start <= csv.size()) {
    const size_t comma = std::min(csv.find(',', start), csv.size());
    const std::string name = csv.substr(start, comma - start);
    bool found = false;
    for (int i = 0; i < 3; ++i) {
      if (name == kLenCurveShapeNames[i]) {
        out.push_back(static_cast<LenCurveShape>(i));
        found = true;
      }
    }
    if (!found) {
      return Status::InvalidArgument("unknown shape '" + name + "' (growing, u, declining)");
    }
    start = comma + 1;
  }
  return out;
}

Result<std::unique_ptr<PlantEnv>> PlantEnv::create(EpisodeFactory factory, PlantEnvConfig c) {
  std::vector<EpisodeFactory> family;
  family.push_back(std::move(factory));
  return create(std::move(family), std::move(c));
}

Result<std::unique_ptr<PlantEnv>> PlantEnv::create(std::vector<EpisodeFactory> family,
                                                   PlantEnvConfig c) {
  if (family.empty()) return Status::InvalidArgument("plant env: no episode factory");
  for (const EpisodeFactory& f : family) {
    if (!f) return Status::InvalidArgument("plant env: no episode factory");
  }
  if (!(c.len_factor_lo > 0) || !(c.len_factor_hi >= c.len_factor_lo)) {
    return Status::InvalidArgument("plant env: length factor range must satisfy 0 < lo <= hi");
  }
  if (c.max_budget_steps < 0 || !(c.budget_step_lo > 0) ||
      !(c.budget_step_hi >= c.budget_step_lo)) {
    return Status::InvalidArgument(
        "plant env: budget steps must be >= 0 and their factor range 0 < lo <= hi");
  }
  if (!(c.sample_period_s > 0) || !(c.decision_period_s > 0) || !(c.episode_s > 0)) {
    return Status::InvalidArgument("plant env: sample, decision and episode periods must be > 0");
  }
  if (c.knob_mask < 1 || c.knob_mask > kMaxActionMask) {
    return Status::InvalidArgument(
        "plant env: knob_mask must select gen_concurrency, group_size and/or power_cap");
  }
  if (c.decide_on == DecideOn::kPhase && !(c.max_decision_period_s >= c.decision_period_s)) {
    return Status::InvalidArgument(
        "plant env: the maximum decision period must be >= the minimum decision period");
  }
  if (!(c.penalty_margin >= 0 && c.penalty_margin < 1)) {
    return Status::InvalidArgument("plant env: penalty_margin must be in [0, 1)");
  }
  if (!(c.budget_scale_lo > 0) || c.budget_scale_hi < c.budget_scale_lo) {
    return Status::InvalidArgument("plant env: budget scale range must satisfy 0 < lo <= hi");
  }
  for (const RandomRange& r : c.ranges) {
    if (r.key.empty() || !(r.lo <= r.hi)) {
      return Status::InvalidArgument("plant env: bad randomisation range '" + r.key + "'");
    }
  }
  std::vector<double> nominal;
  std::vector<char> schedule;
  for (size_t m = 0; m < family.size(); ++m) {
    const std::string who =
        family.size() > 1 ? "plant env: family member " + std::to_string(m) + ": " : "plant env: ";
    FW_ASSIGN_OR_RETURN(PlantEpisode probe, family[m](c.plant_seed_base, {}));
    if (!probe.plant || probe.budget.entries.empty()) {
      return Status::InvalidArgument(who + "the factory gave no plant or no budget");
    }
    if (c.job >= probe.plant->info().jobs.size()) {
      return Status::InvalidArgument(who + "job " + std::to_string(c.job) +
                                     " does not exist (the plant has " +
                                     std::to_string(probe.plant->info().jobs.size()) + ")");
    }
    bool any_knob = false;
    for (const KnobRange& r : probe.plant->info().jobs[c.job].knob_ranges) {
      any_knob |= r.available;
    }
    if (!any_knob) {
      return Status::InvalidArgument(who + "job '" + probe.plant->info().jobs[c.job].name +
                                     "' exposes no knob (gen_concurrency, group_size) to learn on");
    }
    nominal.push_back(probe.budget.entries.front().budget.watts);
    // A schedule has no budget.watts to override (the override would be refused).
    schedule.push_back(probe.budget.entries.size() > 1);
  }
  auto env =
      std::unique_ptr<PlantEnv>(new PlantEnv(std::move(family), std::move(c), std::move(nominal)));
  env->schedule_ = std::move(schedule);
  return env;
}

int PlantEnv::rollout_steps(const PlantEnvConfig& c) {
  const int64_t every = ticks_per_period(c.decision_period_s, c.sample_period_s);
  const int64_t ticks = episode_ticks(c.episode_s, c.sample_period_s);
  if (c.decide_on == DecideOn::kPhase) {
    constexpr double kPhaseRolloutPeriodS = 25;
    return std::max(8, static_cast<int>(std::ceil(
                           c.episode_s / std::max(kPhaseRolloutPeriodS, c.decision_period_s))));
  }
  return static_cast<int>((ticks - 1 + every - 1) / every);
}

PlantEnv::PlantEnv(std::vector<EpisodeFactory> family, PlantEnvConfig config,
                   std::vector<double> nominal_budget_w)
    : factories_(std::move(family)),
      cfg_(std::move(config)),
      nominal_w_(std::move(nominal_budget_w)),
      nominal_budget_w_(nominal_w_.front()),
      stepper_(cfg_.sample_period_s, cfg_.history_s, cfg_.limiter) {
  member_episodes_.assign(factories_.size(), 0);
  every_ = ticks_per_period(cfg_.decision_period_s, cfg_.sample_period_s);
  every_max_ = std::max(every_, ticks_per_period(cfg_.max_decision_period_s, cfg_.sample_period_s));
  ticks_ = episode_ticks(cfg_.episode_s, cfg_.sample_period_s);
}

const ObsSpec& PlantEnv::obs_spec() const { return plant_obs_spec(); }
const ActionSpec& PlantEnv::action_spec() const {
  return plant_action_spec(cfg_.action_mode, cfg_.knob_mask);
}

Status PlantEnv::reset(uint64_t seed, std::span<double> obs) {
  Rng rng = Rng::stream(seed, "plant_env.randomize");
  const double scale = rng.uniform(cfg_.budget_scale_lo, cfg_.budget_scale_hi);
  std::vector<std::string> drawn;
  for (const RandomRange& r : cfg_.ranges) {
    double v = rng.uniform(r.lo, r.hi);
    drawn.push_back(r.key + "=" +
                    (r.integer ? std::to_string(std::llround(v)) : std::to_string(v)));
  }
  // Family draws (header comment), each only when configured.
  member_ = factories_.size() > 1 ? static_cast<size_t>(rng.below(factories_.size())) : 0;
  len_curve_.clear();
  len_shape_ = LenCurveShape::kGrowing;
  if (!cfg_.len_curves.empty()) {
    len_shape_ = cfg_.len_curves[static_cast<size_t>(rng.below(cfg_.len_curves.size()))];
    const double llo = std::log(cfg_.len_factor_lo), lhi = std::log(cfg_.len_factor_hi);
    const auto factor = [&] {  // log-uniform, rounded so the override text is exact
      const double f = std::exp(rng.uniform(llo, lhi));
      return std::clamp(std::round(f * 1e4) / 1e4, cfg_.len_factor_lo, cfg_.len_factor_hi);
    };
    const double t_end = cfg_.episode_s;
    if (len_shape_ == LenCurveShape::kU) {
      std::array<double, 3> f = {factor(), factor(), factor()};
      std::sort(f.begin(), f.end());
      len_curve_ = {{0, f[1]}, {t_end / 2, f[0]}, {t_end, f[2]}};  // falls, then rises above
    } else {
      double a = factor(), b = factor();
      if ((len_shape_ == LenCurveShape::kGrowing) != (a <= b)) std::swap(a, b);
      len_curve_ = {{0, a}, {t_end, b}};
    }
    std::string text = cfg_.len_curve_key + "=[";
    for (size_t i = 0; i < len_curve_.size(); ++i) {
      text += (i ? ", [" : "[") + format_g(len_curve_[i][0], 12) + ", " +
              format_g(len_curve_[i][1], 12) + "]";
    }
    drawn.push_back(text + "]");
  }
  std::vector<std::pair<double, double>> steps;  // start_s, factor
  if (cfg_.max_budget_steps > 0) {
    const int n = static_cast<int>(rng.below(static_cast<uint64_t>(cfg_.max_budget_steps) + 1));
    for (int i = 0; i < n; ++i) {
      const double t = rng.uniform(0.15, 0.85) * cfg_.episode_s;
      steps.push_back({t, rng.uniform(cfg_.budget_step_lo, cfg_.budget_step_hi)});
    }
    std::sort(steps.begin(), steps.end());
  }
  overrides_.clear();
  const bool jitter = cfg_.budget_scale_lo != 1 || cfg_.budget_scale_hi != 1;
  // A member whose budget is a schedule has no budget.watts to override: its entries are
  // scaled below instead.
  bool scale_entries = false;
  if (jitter) {
    if (!schedule_[member_]) {
      overrides_.push_back("budget.watts=" + std::to_string(nominal_w_[member_] * scale));
    } else {
      scale_entries = true;
    }
  }
  overrides_.insert(overrides_.end(), drawn.begin(), drawn.end());
  const uint64_t plant_seed = cfg_.plant_seed_base + seed % cfg_.plant_seed_base;
  FW_ASSIGN_OR_RETURN(ep_, factories_[member_](plant_seed, overrides_));
  if (!ep_.plant || ep_.budget.entries.empty()) {
    return Status::Internal("plant env: the factory gave no plant or no budget");
  }
  if (scale_entries) {
    for (auto& e : ep_.budget.entries) e.budget.watts *= scale;
  }
  if (!steps.empty()) {
    auto& entries = ep_.budget.entries;
    const Budget first = entries.front().budget;
    while (entries.size() > 1 && entries.back().start_s >= steps.front().first) entries.pop_back();
    for (const auto& [t, f] : steps) {
      Budget b = first;
      b.watts = first.watts * f;
      entries.push_back({t, b});
    }
  }
  const PlantInfo& info = ep_.plant->info();
  if (cfg_.job >= info.jobs.size()) return Status::Internal("plant env: job vanished");
  const Budget& b0 = ep_.budget.entries.front().budget;
  stepper_.begin(*ep_.plant, &ep_.budget);
  const BudgetUnits& units = stepper_.units();
  job_units_.clear();
  if (cfg_.job < units.units_of_job.size() && !units.units_of_job[cfg_.job].empty()) {
    job_units_ = units.units_of_job[cfg_.job];
  } else {
    for (size_t u = 0; u < units.size(); ++u) job_units_.push_back(static_cast<int>(u));
  }
  judge_.reset(
      cfg_.window_rule == PlantEnvConfig::WindowRule::kSliding ? WindowJudge::Rule::kSliding
                                                               : WindowJudge::Rule::kTumbling,
      job_units_.size(), WindowJudge::samples_per_window(b0.window_s, cfg_.sample_period_s));
  cmd_ = blank_command(info);
  stats_ = {};
  stats_.budget_w = b0.watts;
  FW_ASSIGN_OR_RETURN(double penalty, tick());  // tick 0: the limiter learns the settings
  (void)penalty;  // no window closes at t = 0 unless the window is one sample
  const Snapshot& first = stepper_.latest();
  last_tokens_ = cfg_.job < first.jobs.size() ? first.jobs[cfg_.job].tokens_total : 0;
  build_plant_features(stepper_.observation(), cfg_.job, obs);
  return Status::Ok();
}

Result<double> PlantEnv::tick() {
  FW_RETURN_IF_ERROR(stepper_.sense());
  const Snapshot& snap = stepper_.latest();
  const BudgetUnits& units = stepper_.units();
  const double budget_w = ep_.budget.at(snap.time_s).watts;
  for (size_t i = 0; i < job_units_.size(); ++i) {
    const double p = unit_power_w(snap, units.units[static_cast<size_t>(job_units_[i])]);
    stats_.energy_j += p * cfg_.sample_period_s;
    judge_.set(i, p / budget_w);
  }
  double penalty = 0;
  if (!judge_.advance()) return penalty;
  const bool sliding = judge_.rule() == WindowJudge::Rule::kSliding;
  for (size_t i = 0; i < job_units_.size(); ++i) {
    const double mean = judge_.mean(i);
    const bool over = mean > 1.0;
    const double excess = cfg_.excess_penalty * std::max(0.0, mean - (1.0 - cfg_.penalty_margin));
    ++stats_.windows;
    if (over) ++stats_.violations;
    if (sliding) {  // a sample's share of one window's charge
      penalty +=
          (over ? excess + cfg_.violation_penalty : excess) / static_cast<double>(judge_.window());
    } else {
      if (over) penalty += cfg_.violation_penalty;
      penalty += excess;
    }
  }
  return penalty;
}

Result<StepResult> PlantEnv::step(std::span<const double> action, std::span<double> obs) {
  if (action.size() != static_cast<size_t>(action_spec().dim()) ||
      obs.size() != static_cast<size_t>(kPlantObsDim)) {
    return Status::InvalidArgument("plant env: action or observation of the wrong size");
  }
  // Decide at the current tick, as ControlLoop does (Stepper::act): SafetyLimiter, then write.
  for (auto& k : cmd_.knobs) k = kNoKnobs;
  for (double& c : cmd_.power_cap_w) c = kUnset;
  const int moved = apply_knob_action(ep_.plant->info(), stepper_.latest(), cfg_.job, action, cmd_,
                                      cfg_.action_mode, cfg_.knob_mask);
  stats_.knob_moves += moved;
  FW_RETURN_IF_ERROR(stepper_.act(cmd_));

  double penalty = 0;
  StepResult r;
  const bool phase = cfg_.decide_on == DecideOn::kPhase;
  for (int64_t i = 0; i < (phase ? every_max_ : every_); ++i) {
    if (stepper_.tick() + 1 >= ticks_) {
      r.truncated = true;
      break;
    }
    stepper_.advance();
    FW_ASSIGN_OR_RETURN(double p, tick());
    penalty += p;
    // eval's write rule (ControlLoop::acts_now): with the budget shield on, the limiter acts at
    // every tick between decisions too.
    if (stepper_.limiter().config().budget_shield) FW_RETURN_IF_ERROR(stepper_.act(cmd_));
    if (phase && i + 1 >= every_ && at_phase_boundary(stepper_.history(), cfg_.job)) break;
  }
  const Snapshot& snap = stepper_.latest();
  const double tokens = cfg_.job < snap.jobs.size() ? snap.jobs[cfg_.job].tokens_total : 0;
  const double produced = tokens - last_tokens_;
  last_tokens_ = tokens;
  stats_.tokens += produced;
  if (stepper_.tick() + 1 >= ticks_) r.truncated = true;
  if (r.truncated) {
    finished_.tokens += stats_.tokens;
    finished_.energy_j += stats_.energy_j;
    finished_.windows += stats_.windows;
    finished_.violations += stats_.violations;
    finished_.knob_moves += stats_.knob_moves;
    finished_.budget_w += stats_.budget_w;
    ++finished_episodes_;
    ++member_episodes_[member_];
  }
  r.reward = produced / cfg_.token_scale - penalty - cfg_.churn_penalty * moved;
  build_plant_features(stepper_.observation(), cfg_.job, obs);
  return r;
}

PlantEpisodeStats PlantEnv::take_finished(int& episodes) {
  episodes = finished_episodes_;
  const PlantEpisodeStats out = finished_;
  finished_ = {};
  finished_episodes_ = 0;
  return out;
}

}  // namespace fw::rl
