#include "controllers/mpc_controller.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>

#include "controllers/static_controller.hpp"

namespace fw {

MpcSetting mpc_setting(const JointCalibration& j) {
  MpcSetting s;
  s.inner = j.inner;
  s.fraction = j.best.fraction;
  s.value = j.best.value;
  s.hold = j.hold;
  s.predicted_worst_ratio = j.best.worst_ratio;
  s.predicted_tokens = j.best.completed_tokens;
  return s;
}

MpcController::MpcController(MpcConfig cfg, std::unique_ptr<MpcTwin> twin, MpcSetting initial,
                             std::function<void(const MpcPlanEvent&)> on_plan)
    : cfg_(std::move(cfg)),
      twin_(std::move(twin)),
      initial_(initial),
      setting_(initial),
      on_plan_(std::move(on_plan)) {}

MpcController::~MpcController() {
  if (pending_.valid()) pending_.wait();
}

void MpcController::reset(const PlantInfo&) {
  if (pending_.valid()) pending_.wait();
  pending_ = {};
  if (twin_) twin_->reset();
  setting_ = initial_;
  next_replan_s_ = cfg_.replan_s;
  margin_ = 0;
  plan_start_s_ = 0;
  observed_worst_ = 0;
  last_shield_s_ = -1e300;
  shield_decisions_ = 0;
  replans_ = 0;
  skipped_replans_ = 0;
}

bool MpcController::plan_ready() const {
  return pending_.valid() &&
         pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

ActuatorSet MpcController::claims() const {
  ActuatorSet s = only_actuator(kCapActuator);
  for (const Actuator& a : cfg_.search.actuators) s.set(static_cast<size_t>(a.index()));
  return s;
}

void MpcController::replan(const Observation& obs) {
  if (pending_.valid()) {  // a search still pending: take it first, or skip this replan
    if (!cfg_.wait_for_plan && !plan_ready()) {
      ++skipped_replans_;
      return;
    }
    finish_plan(obs.time_s);
  }
  // The twin's last under-prediction of the worst trailing window (observed over windows the
  // shield left alone, once a whole window of the setting was seen).
  if (observed_worst_ > 0) {
    margin_ = std::clamp(observed_worst_ - setting_.predicted_worst_ratio, 0.0, cfg_.max_margin);
  }
  MpcPlanEvent ev;
  ev.time_s = obs.time_s;
  ev.margin = margin_;
  ++replans_;
  auto fit = twin_ ? twin_->refit(obs.time_s) : Result<MpcTwin::Fit>(Status::Internal("no twin"));
  if (!fit.ok()) {
    ev.fit = fit.status().message();
    ev.setting = setting_;
    if (on_plan_) on_plan_(ev);
    return;
  }
  ev.fitted = true;
  ev.fit = fit->figures;
  BudgetSchedule b;
  Budget now = *obs.budget;  // the budget in force: no schedule, no look-ahead
  now.watts *= 1.0 - margin_;
  b.entries.push_back({0, now});
  pending_event_ = ev;
  pending_margin_ = margin_;
  apply_at_s_ = obs.time_s + cfg_.plan_delay_s;
  auto search = [plants = fit->plants, b, cfg = cfg_.search]() {
    return calibrate_static_joint(plants, b, cfg);
  };
  if (cfg_.plan_delay_s > 0) {
    try {
      pending_ = std::async(std::launch::async, search);
    } catch (const std::exception&) {  // no thread: the search runs here
      pending_ = {};
    }
  }
  if (!pending_.valid()) {
    std::promise<Result<JointCalibration>> done;
    done.set_value(search());
    pending_ = done.get_future();
    finish_plan(obs.time_s);
  }
}

void MpcController::finish_plan(double time_s) {
  Result<JointCalibration> j = pending_.get();
  pending_ = {};
  MpcPlanEvent ev = pending_event_;
  if (j.ok()) {
    ev.episodes = j->episodes;
    if (j->found) {
      ev.found = true;
      setting_ = mpc_setting(*j);
      // The prediction is against the shrunk budget; the margin compares with the real one.
      setting_.predicted_worst_ratio *= 1.0 - pending_margin_;
    }
  } else {
    ev.fit["search_error"] = j.status().message();
  }
  ev.setting = setting_;
  ev.applied_s = time_s;
  plan_start_s_ = time_s;
  observed_worst_ = 0;
  if (on_plan_) on_plan_(ev);
}

void MpcController::apply_shield(const Observation& obs, Command& c) {
  const BudgetUnits& units = *obs.units;
  const SnapshotRing& hist = *obs.history;
  const size_t n =
      static_cast<size_t>(std::max(1.0, std::round(obs.budget->window_s / obs.sample_period_s)));
  bool shielded = false;
  for (size_t u = 0; u < units.size(); ++u) {
    const std::vector<int>& gpus = units.units[u];
    if (gpus.empty()) continue;
    // The budget less the guard: room for the overshoot of a cap in a phase's first sample.
    const double budget_w = obs.budget->watts - cfg_.guard_w * static_cast<double>(gpus.size());
    // The unit's floor: what it draws at most with every GPU at its lowest cap.
    double floor_w = 0;
    for (int g : gpus) {
      if (g >= 0 && static_cast<size_t>(g) < obs.plant->gpus.size()) {
        floor_w += obs.plant->gpus[static_cast<size_t>(g)].min_cap_w;
      }
    }
    // known[i]: the sum of the unit's newest i samples (i < n).
    const size_t avail = std::min(hist.size(), n - 1);
    known_.assign(avail + 1, 0.0);
    for (size_t a = 0; a < avail; ++a) {
      known_[a + 1] = known_[a] + unit_power_w(hist.at_age(a), gpus);
    }
    // The window ending h samples ahead holds the newest min(n − h, avail) samples, the next
    // one (at most `allowed`) and h − 1 more at no more than the floor: each such window under
    // the budget for every h keeps a safe continuation open at every later decision.
    double allowed_w = 1e300;
    for (size_t h = 1; h <= n; ++h) {
      const size_t k = std::min(n - h, avail);
      const double len = static_cast<double>(k + h);
      const double bound = len * budget_w - known_[k] - static_cast<double>(h - 1) * floor_w;
      allowed_w = std::min(allowed_w, bound);
    }
    const double per_gpu_w = allowed_w / static_cast<double>(gpus.size());
    for (int g : gpus) {
      if (g < 0 || static_cast<size_t>(g) >= c.power_cap_w.size()) continue;
      const GpuInfo& gi = obs.plant->gpus[static_cast<size_t>(g)];
      double& cap = c.power_cap_w[static_cast<size_t>(g)];
      const double planned = std::isnan(cap) ? gi.max_cap_w : cap;
      if (per_gpu_w < planned) {
        cap = std::max(gi.min_cap_w, per_gpu_w);
        shielded = true;
      }
    }
  }
  if (shielded) {
    ++shield_decisions_;
    last_shield_s_ = obs.time_s;
  }
}

Command MpcController::update(const Observation& obs) {
  if (twin_) twin_->observe(obs.latest());
  const double window_s = obs.budget->window_s;
  // Uncertainty: the worst trailing window of the setting, once a whole window of it ran and
  // the shield did not act within it.
  if (obs.time_s - plan_start_s_ >= window_s && obs.time_s - last_shield_s_ > window_s) {
    observed_worst_ = std::max(observed_worst_, obs.worst_ratio(window_s));
  }
  if (pending_.valid() && obs.time_s >= apply_at_s_ - 1e-9 &&
      (cfg_.wait_for_plan || plan_ready())) {
    finish_plan(obs.time_s);
  }
  if (obs.time_s >= next_replan_s_ - 1e-9) {
    replan(obs);
    while (next_replan_s_ <= obs.time_s + 1e-9) next_replan_s_ += cfg_.replan_s;
  }
  Command c =
      StaticController(setting_.inner, setting_.fraction, kUnset, cfg_.period_s, setting_.hold)
          .update(obs);
  if (cfg_.shield) apply_shield(obs, c);
  return c;
}

}  // namespace fw
