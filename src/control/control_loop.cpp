#include "control/control_loop.hpp"

#include <chrono>
#include <cmath>
#include <exception>

#include "control/actuator.hpp"

namespace fw {

ControlLoop::ControlLoop(Plant& plant, const BudgetSchedule& budget, LoopConfig cfg,
                         LimiterConfig limiter)
    : plant_(plant),
      budget_(budget),
      cfg_(std::move(cfg)),
      stepper_(cfg_.sample_period_s, cfg_.history_s, limiter) {
  if (cfg_.track_metrics) {
    metrics_.emplace(plant.info(), budget, cfg_.windows_s);
    stepper_.set_metrics(&*metrics_);
  }
}

void ControlLoop::set_controllers(std::vector<Controller*> cs) {
  controllers_.clear();
  for (Controller* c : cs) controllers_.push_back({c, stepper_.tick()});
}

Status ControlLoop::start() {
  if (!(cfg_.sample_period_s > 0) || !(cfg_.open_ended || cfg_.duration_s > 0)) {
    return Status::InvalidArgument("control loop: sample period and duration must be > 0");
  }
  if (budget_.entries.empty()) return Status::InvalidArgument("control loop: no budget");
  ticks_ = cfg_.open_ended ? 0 : episode_ticks(cfg_.duration_s, cfg_.sample_period_s);
  stepper_.begin(plant_, &budget_);
  started_ = true;
  return reset_controllers();
}

Status ControlLoop::restart() {
  if (!started_) return start();
  if (cfg_.track_metrics) {
    metrics_.emplace(plant_.info(), budget_, cfg_.windows_s);
    stepper_.set_metrics(&*metrics_);
  }
  stepper_.begin(plant_, &budget_, 0, stepper_.tick());
  return reset_controllers();
}

Status ControlLoop::reset_controllers() {
  merged_ = blank_command(plant_.info());
  decision_wall_s_ = 0;
  decisions_ = 0;
  decision_cost_ = {};
  try {
    for (Slot& s : controllers_) {
      s.next_tick = stepper_.tick();
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

Result<bool> ControlLoop::decide() {
  const Observation obs = stepper_.observation();
  const int64_t tick = stepper_.tick();
  bool decided = false;
  for (auto& v : merged_.power_cap_w) v = kUnset;
  for (auto& k : merged_.knobs) k = kNoKnobs;
  merged_.gpu_settings.clear();
  for (Slot& s : controllers_) {
    if (tick < s.next_tick) continue;
    decided = true;
    Command c;
    try {
      const double cpu0 = thread_cpu_s();
      const auto t0 = std::chrono::steady_clock::now();
      c = s.c->update(obs);
      const double wall_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      decision_wall_s_ += wall_s;
      decision_cost_.add(wall_s, thread_cpu_s() - cpu0);
      ++decisions_;
    } catch (const std::exception& e) {
      s.next_tick = tick + 1;  // due again at the next tick
      return Status::Internal("controller " + s.c->name() + " threw: " + e.what());
    } catch (...) {
      s.next_tick = tick + 1;
      return Status::Internal("controller " + s.c->name() + " threw");
    }
    s.next_tick = tick + ticks_per_period(s.c->period_s(), cfg_.sample_period_s);
    if (controllers_.size() == 1) {
      merge_command(c, nullptr, merged_);
    } else {
      const ActuatorSet claimed = s.c->claims();
      merge_command(c, &claimed, merged_);
    }
  }
  return decided;
}

Status ControlLoop::act(const Command& cmd) {
  const Status ws = stepper_.act(cmd);
  if (!ws.ok()) {
    if (write_failures_++ == 0) first_write_error_ = ws;
  }
  // Restore sizes in case a controller sent a malformed vector.
  merged_.power_cap_w.resize(plant_.info().gpus.size());
  merged_.knobs.resize(plant_.info().jobs.size());
  return ws;
}

Status ControlLoop::limit_and_act(bool decided) {
  if (stages_.empty()) return acts_now(decided) ? act(merged_) : Status::Ok();
  Command request = merged_;
  bool forced = false;
  for (LimitStage* s : stages_) forced = s->apply(plant_.info(), latest(), request) || forced;
  return acts_now(decided) || forced ? act(request) : Status::Ok();
}

Status ControlLoop::step_impl() {
  FW_RETURN_IF_ERROR(sense());
  FW_ASSIGN_OR_RETURN(const bool decided, decide());
  // The shield acts at every tick (an empty request between decisions): a trailing window
  // over budget is answered at the next tick, not the next decision.
  (void)limit_and_act(decided);
  advance();
  return Status::Ok();
}

Status ControlLoop::run() {
  FW_RETURN_IF_ERROR(start());
  while (!done()) FW_RETURN_IF_ERROR(step());
  return Status::Ok();
}

}  // namespace fw
