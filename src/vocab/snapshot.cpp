#include "vocab/snapshot.hpp"

namespace fw {
namespace {
constexpr std::array<std::string_view, kNumPhases> kPhaseNames = {
    "idle",     "generate",  "score",    "update",    "sync",       "forward",
    "backward", "allreduce", "alltoall", "optimizer", "checkpoint", "data_stall"};
}

std::string_view phase_name(Phase p) {
  const int i = static_cast<int>(p);
  return (i >= 0 && i < kNumPhases) ? kPhaseNames[i] : "unknown";
}

bool phase_from_name(std::string_view name, Phase& out) {
  for (int i = 0; i < kNumPhases; ++i) {
    if (kPhaseNames[i] == name) {
      out = static_cast<Phase>(i);
      return true;
    }
  }
  return false;
}

}  // namespace fw
