#pragma once
// A pipeline plan read back from the JSON `flexwatt pipeline plan --json` writes
// (pipeline/plan_report.hpp): what the `plan` controller (controllers/plan_controller.hpp)
// applies on a node — one cap per stage, the plan's `constant` setting.
//
// Contract of parse_plan_json(text, source):
// - Accepted: a JSON object with `stages` (integer 1-4096), `microbatches` (integer >= 1),
//   `mode` ("constant" or "schedule"), `straggler_factor` (absent or 1: a straggler plan's
//   caps are for pipelines the node cannot tell apart, so it is refused), `constant.stages` (an
//   array of `stages` objects, element i with `stage` == i, `cap_w` a finite number > 0 or
//   null — null: no cap written — and `forward_mhz`, `backward_mhz` finite numbers >= 0).
//   Optional, checked when present: `gpu` (string), `cap_range_w` ([min, max], finite,
//   0 <= min <= max), `min_segment_s` (finite >= 0), `constant.energy_saved`,
//   `constant.time_increase`, `schedule.energy_saved` (finite numbers), `schedule.segments`
//   (an array of `stages` arrays, each of at least one segment). Where every segment has a
//   `start_s` (plans since the step-keyed schedule; older files have none, and their schedule
//   is not read), the schedule is read: `schedule.pipeline_time_s` a number > 0, each segment's
//   `start_s` in [0, pipeline_time_s] and `cap_w` as a stage's above.
// - Anything else is InvalidArgument "SOURCE: FIELD: why", FIELD the JSON path of the first
//   bad field (`constant.stages[2].cap_w`); text that is not JSON names the byte where parsing
//   stopped. Never throws.
// read_plan_file(path) reads the file (core/text_file.hpp: NotFound, InvalidArgument, kIoError
// naming the path) and parses it with the path as source.

#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::pipeline {

struct PlannedStageCap {
  bool uncapped = true;  // null cap_w: no cap written (the GPU at its default cap)
  double cap_w = 0;      // when !uncapped: the lowest cap that gives the planned clocks
  double forward_mhz = 0, backward_mhz = 0;
};

// One segment of a stage's schedule: its cap from start_s (s from the iteration's start on the
// planned 1F1B timeline, planner.hpp PlanSegment) until the next segment's start (cyclic).
struct ScheduledCap {
  bool uncapped = true;  // null cap_w: the GPU's default cap
  double cap_w = 0;
  double start_s = 0;
};

struct PlanFile {
  std::string source;  // as given to the parser (the path)
  std::string gpu;     // the GPU model planned for ("" when absent)
  int stages = 0;
  int microbatches = 0;
  std::string best_mode;  // "constant" or "schedule": the plan's pick
  double min_segment_s = 0;
  double cap_min_w = 0, cap_max_w = 0;    // the planned range (0, 0 when absent)
  std::vector<PlannedStageCap> constant;  // per stage
  double constant_energy_saved = 0, constant_time_increase = 0;
  double schedule_energy_saved = 0;
  // The schedule switches caps within the iteration (some stage has more than one segment).
  bool schedule_switches = false;
  // Per stage, its segments in start order; empty when the file has no segment starts.
  std::vector<std::vector<ScheduledCap>> schedule;
  double schedule_time_s = 0;  // the planned iteration the starts are in (pipeline_time_s)
};

Result<PlanFile> parse_plan_json(const std::string& text, const std::string& source);
Result<PlanFile> read_plan_file(const std::string& path);

}  // namespace fw::pipeline
