#pragma once
// A pipeline's stage profile: per stage, the time (s) and energy (J) of one forward and one
// backward pass of a micro-batch at each SM clock, in the Perseus artifact's CSV format
// (`stage,instruction,frequency,time,energy`; instruction is `forward` or `backward`,
// frequency in MHz; one GPU of the stage's tensor-parallel group).
//
// Contract: read_stage_profile() accepts a file only when every stage 0..S-1 has both
// instructions, each at one or more clocks, every row's numbers are finite and positive and no
// (stage, instruction, frequency) repeats; any other input is InvalidArgument naming
// "path:line: field: why". Points are sorted by clock, highest first.

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace fw::pipeline {

struct ClockPoint {
  double freq_mhz = 0;
  double time_s = 0;    // one micro-batch pass at this clock
  double energy_j = 0;  // its energy on one GPU
  double power_w() const { return energy_j / time_s; }
};

// One instruction (forward or backward) of one stage: its points, highest clock first.
struct InstrProfile {
  std::vector<ClockPoint> points;
};

enum class Instr { kForward = 0, kBackward = 1 };

struct StageProfile {
  std::string source;  // file it was read from
  // stages[s][0] = forward, stages[s][1] = backward
  std::vector<std::array<InstrProfile, 2>> stages;
  int num_stages() const { return static_cast<int>(stages.size()); }
  const InstrProfile& at(int stage, Instr k) const { return stages[stage][static_cast<int>(k)]; }
};

Result<StageProfile> read_stage_profile(const std::string& path);
// The same checks on a file's text already read (a file confined to the agent's policy_dirs);
// `source` names it in messages as the path would.
Result<StageProfile> parse_stage_profile(std::string_view text, const std::string& source);

// A profile from rows given in code (tests, synthetic pipelines): same checks as the reader,
// with `where` naming the source in messages.
struct ProfileRow {
  int stage = 0;
  Instr instr = Instr::kForward;
  double freq_mhz = 0, time_s = 0, energy_j = 0;
};
Result<StageProfile> make_stage_profile(const std::vector<ProfileRow>& rows,
                                        const std::string& where);

}  // namespace fw::pipeline
