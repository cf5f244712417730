#include "rl/teacher_recorder.hpp"

#include <algorithm>
#include <cmath>

namespace fw::rl {

int nearest_knob_level(const KnobRange& range, double value, int levels, bool dense) {
  int best = 0;
  double best_d = std::abs(knob_level(range, 0, levels, dense) - value);
  for (int lv = 1; lv < levels; ++lv) {
    const double d = std::abs(knob_level(range, lv, levels, dense) - value);
    if (d < best_d) {
      best = lv;
      best_d = d;
    }
  }
  return best;
}

int cap_level_at_or_below(const GpuInfo& gpu, double cap_w) {
  int best = 0;
  for (int lv = 1; lv < kKnobLevels[kPowerCapFactor]; ++lv) {
    if (cap_level_w(gpu, lv) <= cap_w + 1e-9) best = lv;
  }
  return best;
}

TeacherRecorder::TeacherRecorder(Controller& teacher, Controller* driver, Config cfg,
                                 ImitationDataset& out)
    : teacher_(teacher), driver_(driver), cfg_(cfg), out_(out) {
  out_.obs_dim = kPlantObsDim;
  out_.categories = plant_action_spec(KnobActionMode::kLevel, cfg_.knob_mask).categories;
  for (int q = 0; q < kNumActionFactors; ++q) {
    if (cfg_.knob_mask & (1u << q)) factors_.push_back(q);
  }
  obs_.assign(kPlantObsDim, 0.0);
  label_.assign(factors_.size(), 0);
}

void TeacherRecorder::reset(const PlantInfo& info) {
  info_ = &info;
  teacher_.reset(info);
  if (driver_) driver_->reset(info);
  ticks_ = 0;
  every_ = 0;
  knob_.fill(kUnset);
  cap_w_ = kUnset;
  open_ = false;
}

ActuatorSet TeacherRecorder::claims() const {
  ActuatorSet s = teacher_.claims();
  if (driver_) s |= driver_->claims();
  return s;
}

void TeacherRecorder::track(const Command& c, const Snapshot& latest) {
  const JobInfo& job = info_->jobs[cfg_.job];
  for (int q = 0; q < kNumKnobs; ++q) {
    if (cfg_.job < c.knobs.size() && !std::isnan(c.knobs[cfg_.job][q])) {
      knob_[q] = c.knobs[cfg_.job][q];
    } else if (std::isnan(knob_[q]) && cfg_.job < latest.jobs.size()) {
      knob_[q] = latest.jobs[cfg_.job].knobs[q];  // measured until the teacher commands one
    }
  }
  if (!job.gpus.empty()) {
    const auto g0 = static_cast<size_t>(job.gpus.front());
    if (g0 < c.power_cap_w.size() && !std::isnan(c.power_cap_w[g0])) {
      cap_w_ = c.power_cap_w[g0];
    } else if (std::isnan(cap_w_) && g0 < latest.gpus.size()) {
      cap_w_ = latest.gpus[g0].cap_w;
    }
  }
}

void TeacherRecorder::close_record() {
  if (!open_) return;
  const JobInfo& job = info_->jobs[cfg_.job];
  for (size_t f = 0; f < factors_.size(); ++f) {
    if (factors_[f] != kPowerCapFactor) continue;
    const GpuInfo& g0 = info_->gpus[static_cast<size_t>(job.gpus.front())];
    label_[f] = cap_level_at_or_below(g0, std::isnan(min_cap_w_) ? g0.max_cap_w : min_cap_w_);
  }
  out_.add(obs_, label_, cfg_.episode);
  ++records_;
  open_ = false;
}

Command TeacherRecorder::update(const Observation& obs) {
  Command t = teacher_.update(obs);
  track(t, obs.latest());
  if (every_ == 0) {
    every_ = std::max<long>(
        1, static_cast<long>(std::ceil(cfg_.student_period_s / obs.sample_period_s - 1e-9)));
  }
  const bool decide = ticks_ % every_ == 0;
  ++ticks_;
  if (decide) {
    close_record();
    build_plant_features(obs, cfg_.job, obs_);
    const JobInfo& job = info_->jobs[cfg_.job];
    for (size_t f = 0; f < factors_.size(); ++f) {
      const int q = factors_[f];
      if (q == kPowerCapFactor) continue;
      label_[f] = nearest_knob_level(job.knob_ranges[q], knob_[q], kKnobLevels[q],
                                     /*dense=*/q == kDenseFactor);
    }
    min_cap_w_ = cap_w_;
    open_ = !job.gpus.empty() || (cfg_.knob_mask & kPowerCapBit) == 0;
  } else if (open_ && !std::isnan(cap_w_)) {
    min_cap_w_ = std::isnan(min_cap_w_) ? cap_w_ : std::min(min_cap_w_, cap_w_);
  }
  if (!driver_) return t;
  if (!decide) return Command{};
  return driver_->update(obs);
}

void TeacherRecorder::finish() { close_record(); }

}  // namespace fw::rl
