#pragma once
// TeacherRecorder: a Controller that wraps a teacher controller (e.g. mpc) and records, at
// the decisions a level-action PPO policy would take, (observation as that policy sees it,
// the teacher's setting as that policy's action) — the dataset of behaviour cloning
// (rl/imitation.hpp, docs/rl.md "Imitation of a planner").
//
// The loop calls it every sample (REQUIRES: the teacher's period is at most one sample
// period); it forwards every call to the teacher. Every student_period_s (rounded up to whole
// samples, first at the first call: where ControlLoop calls a `ppo:` controller with that
// period) it builds build_plant_features() for `job` and opens a record. Its label, per
// action factor of the student's spec (level actions):
//   - a knob: the level whose rung (knob_level()) is nearest the knob value the teacher has
//     commanded (the measured value until it commands one), at the decision;
//   - the cap: the highest cap level (cap_level_w()) at or below the lowest cap the teacher
//     commands for the job's first GPU from this decision to the next (its shield may lower
//     the planned cap at any sample; the student holds one cap for a whole period, so the
//     label is the one safe for all of it).
// A record closes at the next decision or at finish().
//
// Driver (DAgger): with a driver (the student as a `ppo:` controller at student_period_s),
// the command returned is the driver's at the decisions and nothing between them, so the
// student drives while the teacher, still updated every sample, labels the states the student
// reaches. Without one the teacher's command is returned every sample.
//
// Contract: as Controller; claims() is the union of the teacher's and the driver's. Not
// thread-safe. The dataset must outlive the recorder.

#include <cstddef>
#include <string>
#include <vector>

#include "control/controller.hpp"
#include "rl/imitation.hpp"
#include "rl/plant_features.hpp"

namespace fw::rl {

// The level (0..levels−1) of a knob whose rung is nearest `value` (the lower on a tie).
int nearest_knob_level(const KnobRange& range, double value, int levels, bool dense);
// The highest cap level of `gpu` whose cap is at or below cap_w (0 when none is).
int cap_level_at_or_below(const GpuInfo& gpu, double cap_w);

class TeacherRecorder : public Controller {
 public:
  struct Config {
    double student_period_s = 3;
    unsigned knob_mask = kAllKnobs | kPowerCapBit;  // the student's factors (level actions)
    size_t job = 0;
    int episode = 0;  // the records' episode id
  };
  // `out` gets the records; its obs_dim and categories are set here (to the student's spec).
  // teacher (and driver, when not null) are not owned and must outlive the recorder.
  TeacherRecorder(Controller& teacher, Controller* driver, Config cfg, ImitationDataset& out);

  std::string name() const override { return "teacher:" + teacher_.name(); }
  double period_s() const override { return teacher_.period_s(); }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override;
  // Closes the open record (call once the episode ended).
  void finish();
  int records() const { return records_; }

 private:
  void track(const Command& teacher_cmd, const Snapshot& latest);
  void close_record();

  Controller& teacher_;
  Controller* driver_;
  Config cfg_;
  ImitationDataset& out_;
  const PlantInfo* info_ = nullptr;
  std::vector<int> factors_;  // kActuatorTable rows in the student's spec, in order
  long ticks_ = 0;
  long every_ = 0;  // samples per student decision (set at the first call)
  // The teacher's setting as commanded so far (NaN: never commanded).
  std::array<double, kNumKnobs> knob_{};
  double cap_w_ = kUnset;
  // The open record: observation, knob labels, the lowest cap since its decision.
  bool open_ = false;
  std::vector<double> obs_;
  std::vector<int> label_;
  double min_cap_w_ = kUnset;
  int records_ = 0;
};

}  // namespace fw::rl
