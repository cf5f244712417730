#pragma once
// PlanCapsController (`plan:PATH` in the node agent, `eval` and `caps`): applies a plan that
// `flexwatt pipeline plan --json` wrote (pipeline/plan_file.hpp) to one pipeline job as per-GPU
// caps, through the SafetyLimiter like every controller. The deploy path of the planner: it
// reads no profile and plans nothing; it writes each GPU the cap of the stage it runs.
//
// Caps: the plan's `constant` setting, one cap per stage (its `cap_w`: the lowest cap that
// gives the planned clocks); a stage with no cap (`cap_w` null) gets the GPU's default cap
// (PlantInfo: on the agent the cap found at start). A cap outside the GPU's settable range is
// written as planned and clamped by the limiter (counted in its `clamped` actions). A plan whose
// best mode is `schedule` still gets its constant caps: the job reports its step count at the
// sample period (2 Hz on the agent) and nothing within a step, so segments keyed to 1F1B phases
// cannot be followed honestly (docs/caps.md, "Deploying a plan through the agent").
//
// GPUs per stage: with `stage_gpus` (the spec's stages=0-1:2-3), stage s runs the plant GPUs
// listed s-th; without, job `job`'s GPUs in their order (a registered job's: the order it
// listed them) are cut into `stages` equal consecutive blocks (stage s: block s; Megatron's rank
// order, pipeline stage outermost). The blocks need a GPU count that is a multiple of the
// stages; when the job (as reset() sees it) does not have one, or an explicit list names a GPU
// the plant does not have, the controller writes nothing and mapping() says why.
//
// Writes its caps at every decision (idempotent, as static does), so caps the fail-safe or the
// limiter put in force return when they let go. Claims the cap actuator; reads no readings.

#include <string>
#include <vector>

#include "control/controller.hpp"
#include "core/status.hpp"
#include "pipeline/plan_file.hpp"

namespace fw {

struct PlanCapsConfig {
  std::vector<double> stage_caps_w;          // per stage; NaN: no cap (the GPU's default)
  std::vector<std::vector<int>> stage_gpus;  // per stage, plant GPUs; empty: job's, in blocks
  int job = 0;                               // the job whose GPUs are cut into blocks
  double period_s = 2;
};

// "0-1:2-3" or "0+4:1+5" (stages separated by ':', each a '+'-list of GPUs or ranges A-B):
// per stage, its plant GPU indices. InvalidArgument naming `stages=` when the text does not
// parse, the stage count differs from `stages`, a GPU repeats, or one is >= n_gpus.
Result<std::vector<std::vector<int>>> parse_stage_gpus(const std::string& text, int stages,
                                                       int n_gpus);

// The config for `plan`: the file's constant caps (null: NaN), stages= parsed against the
// plant's GPU count when not empty, the job and period as given. Errors as parse_stage_gpus,
// prefixed "plan: ".
Result<PlanCapsConfig> plan_caps_config(const pipeline::PlanFile& plan,
                                        const std::string& stages_text, int job, double period_s,
                                        const PlantInfo& info);

class PlanCapsController : public Controller {
 public:
  // InvalidArgument for no stage, a cap that is not NaN and not > 0, a stage_gpus list of the
  // wrong length, a negative job or a period <= 0.
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

 private:
  explicit PlanCapsController(PlanCapsConfig cfg) : cfg_(std::move(cfg)) {}
  PlanCapsConfig cfg_;
  std::vector<double> caps_w_;
  std::vector<int> stage_of_;
  Status mapping_ = Status::Ok();
};

}  // namespace fw
