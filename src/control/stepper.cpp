#include "control/stepper.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace fw {

int64_t episode_ticks(double duration_s, double sample_period_s) {
  return std::max<int64_t>(1, std::llround(duration_s / sample_period_s));
}

int64_t ticks_per_period(double period_s, double sample_period_s) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(period_s / sample_period_s - 1e-9)));
}

size_t history_capacity(double history_s, double sample_period_s) {
  return static_cast<size_t>(std::ceil(history_s / sample_period_s)) + 1;
}

Stepper::Stepper(double sample_period_s, double history_s, LimiterConfig limiter)
    : sample_period_s_(sample_period_s),
      limiter_(limiter),
      history_(history_capacity(history_s, sample_period_s)) {}

void Stepper::begin(Plant& plant, const BudgetSchedule* budget, double start_s,
                    int64_t first_tick) {
  plant_ = &plant;
  budget_ = budget;
  if (budget != nullptr) {
    units_ = make_budget_units(plant.info(), budget->entries.empty()
                                                 ? BudgetScope::kNode
                                                 : budget->entries.front().budget.scope);
  }
  start_s_ = start_s;
  tick_ = first_tick;
  limiter_fresh_ = false;
  history_.clear();
}

Status Stepper::sense() {
  const double t = time_s();
  const Status read = plant_->read(t, snap_);
  if (!read.ok()) return read.with_context("plant read at t=" + std::to_string(t));
  snap_.time_s = t;
  if (!limiter_fresh_ && budget_ != nullptr) {  // without a budget there is no act()
    limiter_.reset(plant_->info(), snap_);
    limiter_fresh_ = true;
  }
  history_.push(snap_);
  if (metrics_ != nullptr) metrics_->add(snap_, sample_period_s_);
  if (recorder_ != nullptr) recorder_->record(snap_);
  return Status::Ok();
}

Observation Stepper::observation() const {
  Observation obs;
  obs.time_s = snap_.time_s;
  obs.sample_period_s = sample_period_s_;
  obs.plant = &plant_->info();
  obs.budget = &budget_->at(snap_.time_s);
  obs.units = &units_;
  obs.history = &history_;
  return obs;
}

Status Stepper::act(const Command& request) {
  const Command out = limiter_.apply(request, observation());
  if (!out.any_set()) return Status::Ok();
  return plant_->write(out);
}

}  // namespace fw
