#pragma once
// PlanCapsController (`plan:PATH` in the node agent, `eval` and `caps`): applies a plan that
// `flexwatt pipeline plan --json` wrote (pipeline/plan_file.hpp) to one pipeline job as per-GPU
// caps, through the SafetyLimiter like every controller. The deploy path of the planner: it
// reads no profile and plans nothing; it writes each GPU the cap of the stage it runs.
//
// Caps: the plan's `constant` setting, one cap per stage (its `cap_w`: the lowest cap that
// gives the planned clocks); a stage with no cap (`cap_w` null) gets the GPU's default cap
// (PlantInfo: on the agent the cap found at start). A cap outside the GPU's settable range is
// written as planned and clamped by the limiter (counted in its `clamped` actions).
//
// Step-keyed schedule (`schedule` not empty: a plan whose best mode is `schedule`, with segment
// starts, pipeline/plan_file.hpp): each stage's segments start at a fraction of the iteration
// (start_s / the planned iteration), anchored at the job's step boundaries. A boundary is the
// job's first busy sample or one where its step count grew; it lies step_age_s before the
// read when the job announced that (JobReading: the agent's job channel, the pipeline hook
// sends it at each step's end), else half a sample period back (the simulator). The step time
// T is the mean spacing of the boundaries seen (the last kStepsKept of them; the plan's times
// are in the profile's seconds, the job's may differ). A GPU's cap at t after the newest
// boundary is the highest of its stage's segment caps over the iteration fractions
// [(t + lead_down_s) / T, (t + lead_up_s) / T] (cyclic: the next iteration begins at T): a
// lowering is written lead_down_s before its segment and a raise lead_up_s before (cap settling,
// the `frontier` controller's assumption: 0.2 s down, 1.5 s up). The schedule is followed only
// while T is known (two boundaries), the newest boundary is younger than 2 T and every segment
// of a stage that switches lasts at least min_segment_s at T (the cap settling time assumed by
// `pipeline plan`'s default, 2.2 s); otherwise the constant caps, and following() says why not.
//
// GPUs per stage: with `stage_gpus` (the spec's stages=0-1:2-3), stage s runs the plant GPUs
// listed s-th; without, where job `job` registered its GPUs' pipeline stages (JobInfo::
// pipeline_stages), each GPU runs its own stage, and a stage none of them runs is not on this
// node (a pipeline across nodes: each node's agent applies its share of one plan; a stage
// outside the plan: nothing written, mapping() says why); otherwise job `job`'s GPUs in their
// order (a registered job's: the order it listed them) are cut into `stages` equal consecutive
// blocks (stage s: block s; Megatron's rank order, pipeline stage outermost). The blocks need a
// GPU count that is a multiple of the stages; when the job (as reset() sees it) does not have
// one, or an explicit list names a GPU the plant does not have, the controller writes nothing
// and mapping() says why.
//
// Writes its caps at every decision (idempotent, as static does), so caps the fail-safe or the
// limiter put in force return when they let go. Claims the cap actuator; reads no readings.

#include <string>
#include <utility>
#include <vector>

#include "control/controller.hpp"
#include "core/status.hpp"
#include "pipeline/plan_file.hpp"

namespace fw {

// One segment of a stage's step-keyed schedule: its cap (NaN: the GPU's default) from
// start_frac of the iteration (in [0, 1)) to the next segment's start (cyclic).
struct PlanSegmentCap {
  double cap_w = kUnset;
  double start_frac = 0;
};

struct PlanCapsConfig {
  std::vector<double> stage_caps_w;          // per stage; NaN: no cap (the GPU's default)
  std::vector<std::vector<int>> stage_gpus;  // per stage, plant GPUs; empty: job's, in blocks
  int job = 0;                               // the job whose GPUs are cut into blocks
  double period_s = 2;
  // Per stage, its segments in start order (the first at the lowest fraction); empty: constant
  // caps only.
  std::vector<std::vector<PlanSegmentCap>> schedule;
  double min_segment_s = 2.2;
  double lead_up_s = 1.5, lead_down_s = 0.2;
};

// "0-1:2-3" or "0+4:1+5" (stages separated by ':', each a '+'-list of GPUs or ranges A-B):
// per stage, its plant GPU indices. InvalidArgument naming `stages=` when the text does not
// parse, the stage count differs from `stages`, a GPU repeats, or one is >= n_gpus.
Result<std::vector<std::vector<int>>> parse_stage_gpus(const std::string& text, int stages,
                                                       int n_gpus);

// The config for `plan`: the file's constant caps (null: NaN), stages= parsed against the
// plant's GPU count when not empty, the job and period as given; with `follow_schedule` and a
// plan whose best mode is `schedule` with segment starts that switch somewhere, its schedule
// (starts as fractions of schedule_time_s). Errors as parse_stage_gpus, prefixed "plan: ".
Result<PlanCapsConfig> plan_caps_config(const pipeline::PlanFile& plan,
                                        const std::string& stages_text, int job, double period_s,
                                        const PlantInfo& info, bool follow_schedule = false);

class PlanCapsController : public Controller {
 public:
  // InvalidArgument for no stage, a cap that is not NaN and not > 0, a stage_gpus list of the
  // wrong length, a negative job or a period <= 0; a schedule not one non-empty list per stage
  // with starts in [0, 1) in order, leads with 0 <= lead_down_s <= lead_up_s, or
  // min_segment_s < 0.
  static Result<PlanCapsController> create(const PlanCapsConfig& cfg);

  std::string name() const override { return "plan"; }
  double period_s() const override { return cfg_.period_s; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override { return only_actuator(kCapActuator); }

  // After reset(): per plant GPU, the cap it is given (NaN: not in the plan's job), and the
  // stage it runs (-1: none); mapping() is Ok, or why nothing is written.
  const std::vector<double>& gpu_caps_w() const { return caps_w_; }
  const std::vector<int>& gpu_stage() const { return stage_of_; }
  const Status& mapping() const { return mapping_; }
  // At the last update: Ok while the schedule was followed, else why the constant caps were
  // written (no schedule, step time unknown, boundary stale, segments too short).
  const Status& following() const { return following_; }
  double step_s() const { return step_s_; }  // the step time measured (0: not yet)

  static constexpr size_t kStepsKept = 8;

 private:
  explicit PlanCapsController(PlanCapsConfig cfg) : cfg_(std::move(cfg)) {}
  // The highest cap of stage s's segments over iteration fractions [a, b] (b - a < 1), the
  // GPU's default cap for an uncapped one.
  double max_cap_over(size_t s, double a, double b, double default_w) const;
  Status schedule_usable() const;

  PlanCapsConfig cfg_;
  std::vector<double> caps_w_, default_w_;
  std::vector<int> stage_of_;
  Status mapping_ = Status::Ok();
  Status following_ = Status::Ok();
  double shortest_frac_ = 1;  // the shortest segment of a switching stage, of the iteration
  double last_steps_ = -1, step_s_ = 0;
  std::vector<std::pair<double, double>> boundaries_;  // (time s, steps_total), oldest first
};

}  // namespace fw
