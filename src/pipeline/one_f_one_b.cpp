#include "pipeline/one_f_one_b.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace fw::pipeline {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kFill:
      return "fill";
    case Phase::kWarmup:
      return "warmup";
    case Phase::kDrain:
      return "drain";
    case Phase::kSteady:
      return "steady";
    case Phase::kCooldown:
      return "cooldown";
  }
  return "?";
}

OneFOneB::OneFOneB(int stages, int microbatches)
    : stages_(stages), microbatches_(microbatches), counts_(static_cast<size_t>(stages)) {
  // Each stage's own op sequence.
  std::vector<std::vector<Op>> seq(static_cast<size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    const int w = std::min(stages - 1 - s, microbatches);
    auto push = [&](Instr k, int mb, Phase p) {
      seq[s].push_back({s, k, mb, p, -1, -1});
      ++counts_[s][static_cast<int>(k)][static_cast<int>(p)];
    };
    for (int i = 0; i < w; ++i) push(Instr::kForward, i, i == 0 ? Phase::kFill : Phase::kWarmup);
    for (int i = 0; i < microbatches - w; ++i) {
      push(Instr::kForward, w + i, Phase::kSteady);
      push(Instr::kBackward, i, Phase::kSteady);
    }
    for (int i = microbatches - w; i < microbatches; ++i) {
      push(Instr::kBackward, i, i == microbatches - 1 ? Phase::kDrain : Phase::kCooldown);
    }
  }
  // Topological order: repeatedly take, stage by stage, every op whose dependency is placed.
  std::map<std::tuple<int, int, int>, int> placed;  // (stage, instr, mb) -> index
  std::vector<size_t> next(static_cast<size_t>(stages), 0);
  const size_t total = static_cast<size_t>(stages) * static_cast<size_t>(microbatches) * 2;
  ops_.reserve(total);
  while (ops_.size() < total) {
    for (int s = 0; s < stages; ++s) {
      while (next[s] < seq[s].size()) {
        Op op = seq[s][next[s]];
        const int k = static_cast<int>(op.instr);
        int dep = -1;
        if (op.instr == Instr::kForward && s > 0) {
          auto it = placed.find({s - 1, k, op.microbatch});
          if (it == placed.end()) break;
          dep = it->second;
        } else if (op.instr == Instr::kBackward && s < stages - 1) {
          auto it = placed.find({s + 1, k, op.microbatch});
          if (it == placed.end()) break;
          dep = it->second;
        }
        op.dep = dep;
        op.prev = next[s] == 0 ? -1
                               : placed.at({s, static_cast<int>(seq[s][next[s] - 1].instr),
                                            seq[s][next[s] - 1].microbatch});
        placed[{s, k, op.microbatch}] = static_cast<int>(ops_.size());
        ops_.push_back(op);
        prev_.push_back(op.prev);
        dep_.push_back(op.dep);
        slot_.push_back(slot(s, op.instr, op.phase));
        ++next[s];
      }
    }
  }
}

double OneFOneB::iteration_time(const double* slot_s, std::vector<double>& end) const {
  const size_t n = ops_.size();
  end.resize(n);
  double* e = end.data();
  const int* prev = prev_.data();
  const int* dep = dep_.data();
  const int* slot = slot_.data();
  double t = 0;
  for (size_t i = 0; i < n; ++i) {
    double start = prev[i] >= 0 ? e[prev[i]] : 0.0;
    if (dep[i] >= 0 && e[dep[i]] > start) start = e[dep[i]];
    e[i] = start + slot_s[slot[i]];
    if (e[i] > t) t = e[i];
  }
  return t;
}

double OneFOneB::iteration_time(const OpDurations& d, std::vector<double>& end) const {
  end.resize(ops_.size());
  double t = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op& op = ops_[i];
    double start = op.prev >= 0 ? end[op.prev] : 0.0;
    if (op.dep >= 0) start = std::max(start, end[op.dep]);
    end[i] = start + d[op.stage][static_cast<int>(op.instr)][static_cast<int>(op.phase)];
    t = std::max(t, end[i]);
  }
  return t;
}

}  // namespace fw::pipeline
