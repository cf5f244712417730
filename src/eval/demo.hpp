#pragma once
// The demo (`flexwatt demo`): the 7B GRPO scenario with the baselines, the shipped PPO
// policies and the look-ahead reference, compared with the published figures, and a report
// directory: report.json (the eval JSON plus "comparison"), summary.csv, power.svg and the
// traces of the first seed.

#include <optional>
#include <string>

#include "core/text_table.hpp"
#include "eval/evaluation.hpp"

namespace fw::eval {

// The demo runs with --reference auto: each row against the joint static over the actuators
// its controller claims. The knob+cap PPO's is `static` (gen_concurrency, group_size and the
// cap searched jointly); the knob-only policy's is the joint static over both knobs
// (kDemoStaticKnobs, listed so it is a row of the table).
// A static baseline with a power cap: group size and concurrency pinned at the top of the 7B
// job's ranges (values above a job's range are clamped to it), the cap calibrated as static's
// actuator: one point of the joint search, shown beside it. The look-ahead reference searches
// both knobs and the cap.
inline constexpr const char* kDemoStaticKnobs = "static:knob=gen_concurrency+group_size";
inline constexpr const char* kDemoStaticCap = "static:knob=caps,group_size=16,gen_concurrency=64";
inline constexpr const char* kDemoOracle = "lookahead:knob=gen_concurrency+group_size+caps";

// Published 7B figures: PPO meta-controller vs the static baseline over a 500-step
// trajectory on one A100 (arXiv 2608.11226 abstract; docs/sources.md §1a).
inline constexpr double kPubViolationCut = -0.898;
inline constexpr double kPubTokens = 0.181;
inline constexpr double kPubTokensPerMwh = 0.262;

struct DemoRequest {
  std::string scenario_path = "scenarios/grpo-7b-a100.yaml";
  std::string policy_path = "policies/grpo-7b-a100.json";
  std::string knobs_policy_path = "policies/grpo-7b-a100-knobs.json";  // "none": left out
  std::string out_dir = "flexwatt-demo";
  int seeds = 5;                     // evaluation seeds 1..seeds
  std::optional<double> duration_s;  // absent: the scenario's; else >= 60
  int threads = 2;
};

struct DemoResult {
  EvalRequest eval;
  EvalReport report;
  nlohmann::json json;  // report.json as written
};

// Runs the evaluation and writes the report directory. NotFound for a missing input file,
// InvalidArgument for a bad duration, IoError when the directory cannot be written.
Result<DemoResult> run_demo(const DemoRequest& req, const ProgressFn& progress = {},
                            const PrepareFn& prepare = {});

// The headline, printed first: PPO against the strongest fixed setting on the same actuators
// (of the joint static and static-cap rows, the one with the most step tokens, named), the
// published figures beside it, labelled as the paper's, against its own static baseline.
std::string format_demo_headline(const DemoRequest& req, const DemoResult& r,
                                 const TextStyle& style = {});
// The text after the eval table: our simulated figures beside the published ones, then every
// file the demo wrote; prose wrapped to style.width.
std::string format_demo_comparison(const DemoRequest& req, const DemoResult& r,
                                   const TextStyle& style = {});

}  // namespace fw::eval
