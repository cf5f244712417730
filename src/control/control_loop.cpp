#include "control/control_loop.hpp"

#include <cmath>
#include <exception>

#include "control/actuator.hpp"

namespace fw {

ControlLoop::ControlLoop(Plant& plant, const BudgetSchedule& budget, LoopConfig cfg,
                         LimiterConfig limiter)
    : plant_(plant),
      budget_(budget),
      cfg_(std::move(cfg)),
      units_(make_budget_units(plant.info(), budget.entries.empty()
                                                 ? BudgetScope::kNode
                                                 : budget.entries.front().budget.scope)),
      limiter_(limiter),
      metrics_(plant.info(), budget, cfg_.windows_s),
      history_(static_cast<size_t>(std::ceil(cfg_.history_s / cfg_.sample_period_s)) + 1) {}

Status ControlLoop::start() {
  if (!(cfg_.sample_period_s > 0) || !(cfg_.duration_s > 0)) {
    return Status::InvalidArgument("control loop: sample period and duration must be > 0");
  }
  if (budget_.entries.empty()) return Status::InvalidArgument("control loop: no budget");
  tick_ = 0;
  ticks_ = std::max<int64_t>(1, std::llround(cfg_.duration_s / cfg_.sample_period_s));
  history_.clear();
  merged_ = blank_command(plant_.info());
  try {
    for (Slot& s : controllers_) {
      s.next_tick = 0;
      s.c->reset(plant_.info());
      if (auto* b = dynamic_cast<PlantBranching*>(s.c)) b->bind_plant(&plant_);
    }
  } catch (const std::exception& e) {
    return Status::Internal(std::string("control loop: controller reset threw: ") + e.what());
  }
  std::vector<const Controller*> composed;
  for (const Slot& s : controllers_) composed.push_back(s.c);
  return check_claims(composed).with_context("control loop");
}

Status ControlLoop::step() {
  try {
    return step_impl();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("control loop: exception at t=") +
                            std::to_string(time_s()) + " s: " + e.what());
  } catch (...) {
    return Status::Internal("control loop: unknown exception");
  }
}

Status ControlLoop::step_impl() {
  const double t = time_s();
  FW_RETURN_IF_ERROR(plant_.read(t, snap_).with_context("plant read at t=" + std::to_string(t)));
  snap_.time_s = t;
  if (tick_ == 0) limiter_.reset(plant_.info(), snap_);
  history_.push(snap_);
  metrics_.add(snap_, cfg_.sample_period_s);
  if (recorder_ != nullptr) recorder_->record(snap_);

  Observation obs;
  obs.time_s = t;
  obs.sample_period_s = cfg_.sample_period_s;
  obs.plant = &plant_.info();
  obs.budget = &budget_.at(t);
  obs.units = &units_;
  obs.history = &history_;

  bool decided = false;
  for (auto& v : merged_.power_cap_w) v = kUnset;
  for (auto& k : merged_.knobs) k = kNoKnobs;
  for (Slot& s : controllers_) {
    if (tick_ < s.next_tick) continue;
    decided = true;
    const double period = s.c->period_s();
    const int64_t every =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(period / cfg_.sample_period_s - 1e-9)));
    s.next_tick = tick_ + every;
    const Command c = s.c->update(obs);
    if (controllers_.size() == 1) {
      merge_command(c, nullptr, merged_);
    } else {
      const ActuatorSet claimed = s.c->claims();
      merge_command(c, &claimed, merged_);
    }
  }
  if (decided) {
    const Command out = limiter_.apply(merged_, obs);
    const bool any = out.any_set();
    if (any) {
      const Status ws = plant_.write(out);
      if (!ws.ok()) {
        if (write_failures_++ == 0) first_write_error_ = ws;
      }
    }
    // Restore sizes in case a controller sent a malformed vector.
    merged_.power_cap_w.resize(plant_.info().gpus.size());
    merged_.knobs.resize(plant_.info().jobs.size());
  }
  ++tick_;
  return Status::Ok();
}

Status ControlLoop::run() {
  FW_RETURN_IF_ERROR(start());
  while (!done()) FW_RETURN_IF_ERROR(step());
  return Status::Ok();
}

}  // namespace fw
