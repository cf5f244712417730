#include "controllers/plan_controller.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace fw {
namespace {

// Splits `s` on `sep` (empty pieces kept).
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    const size_t j = s.find(sep, i);
    out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) return out;
    i = j + 1;
  }
}

// A non-negative decimal integer of at most 6 digits, else -1.
int index_of(const std::string& s) {
  if (s.empty() || s.size() > 6) return -1;
  for (char ch : s)
    if (ch < '0' || ch > '9') return -1;
  return std::atoi(s.c_str());
}

}  // namespace

Result<std::vector<std::vector<int>>> parse_stage_gpus(const std::string& text, int stages,
                                                       int n_gpus) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("stages=" + text + ": " + why);
  };
  std::vector<std::vector<int>> out;
  std::vector<bool> seen(static_cast<size_t>(std::max(0, n_gpus)), false);
  for (const std::string& group : split(text, ':')) {
    std::vector<int> gpus;
    for (const std::string& item : split(group, '+')) {
      const size_t dash = item.find('-');
      const int a = index_of(item.substr(0, dash));
      const int b = dash == std::string::npos ? a : index_of(item.substr(dash + 1));
      if (a < 0 || b < a) {
        return bad("'" + item +
                   "' is not a GPU index or range A-B (stages ':'-separated, GPUs '+')");
      }
      for (int g = a; g <= b; ++g) {
        if (g >= n_gpus) {
          return bad("GPU " + std::to_string(g) + ": the plant has " + std::to_string(n_gpus) +
                     " GPUs (0-" + std::to_string(n_gpus - 1) + ")");
        }
        if (seen[g]) return bad("GPU " + std::to_string(g) + " is in more than one stage");
        seen[g] = true;
        gpus.push_back(g);
      }
    }
    out.push_back(std::move(gpus));
  }
  if (static_cast<int>(out.size()) != stages) {
    return bad(std::to_string(out.size()) + " stages listed; the plan has " +
               std::to_string(stages));
  }
  return out;
}

Result<PlanCapsConfig> plan_caps_config(const pipeline::PlanFile& plan,
                                        const std::string& stages_text, int job, double period_s,
                                        const PlantInfo& info) {
  PlanCapsConfig c;
  for (const pipeline::PlannedStageCap& s : plan.constant)
    c.stage_caps_w.push_back(s.uncapped ? kUnset : s.cap_w);
  c.job = job;
  c.period_s = period_s;
  if (!stages_text.empty()) {
    auto g = parse_stage_gpus(stages_text, plan.stages, static_cast<int>(info.gpus.size()));
    if (!g.ok()) return g.status().with_context("plan");
    c.stage_gpus = std::move(g).value();
  }
  return c;
}

Result<PlanCapsController> PlanCapsController::create(const PlanCapsConfig& cfg) {
  if (cfg.stage_caps_w.empty()) return Status::InvalidArgument("plan: no stage");
  for (double w : cfg.stage_caps_w) {
    if (!std::isnan(w) && !(w > 0 && std::isfinite(w))) {
      return Status::InvalidArgument("plan: a stage cap is not > 0");
    }
  }
  if (!cfg.stage_gpus.empty() && cfg.stage_gpus.size() != cfg.stage_caps_w.size()) {
    return Status::InvalidArgument("plan: stages= lists " + std::to_string(cfg.stage_gpus.size()) +
                                   " stages; the plan has " +
                                   std::to_string(cfg.stage_caps_w.size()));
  }
  if (cfg.job < 0 || !(cfg.period_s > 0)) {
    return Status::InvalidArgument("plan: needs job >= 0 and period_s > 0");
  }
  return PlanCapsController(cfg);
}

void PlanCapsController::reset(const PlantInfo& info) {
  const size_t n = info.gpus.size();
  const size_t S = cfg_.stage_caps_w.size();
  caps_w_.assign(n, kUnset);
  stage_of_.assign(n, -1);
  mapping_ = Status::Ok();
  std::vector<std::vector<int>> blocks = cfg_.stage_gpus;
  if (blocks.empty()) {
    if (static_cast<size_t>(cfg_.job) >= info.jobs.size()) {
      mapping_ =
          Status::InvalidArgument("plan: job=" + std::to_string(cfg_.job) + ": the plant has " +
                                  std::to_string(info.jobs.size()) + " jobs");
      return;
    }
    const std::vector<int>& g = info.jobs[cfg_.job].gpus;
    if (g.empty() || g.size() % S != 0) {
      mapping_ = Status::InvalidArgument(
          "plan: job " + std::to_string(cfg_.job) + " runs on " + std::to_string(g.size()) +
          " GPUs, not a multiple of the plan's " + std::to_string(S) + " stages (give stages=)");
      return;
    }
    const size_t k = g.size() / S;
    blocks.assign(S, {});
    for (size_t i = 0; i < g.size(); ++i) blocks[i / k].push_back(g[i]);
  }
  for (size_t s = 0; s < S; ++s) {
    for (int g : blocks[s]) {
      if (g < 0 || static_cast<size_t>(g) >= n) {
        mapping_ = Status::InvalidArgument("plan: GPU " + std::to_string(g) + ": the plant has " +
                                           std::to_string(n) + " GPUs");
        caps_w_.assign(n, kUnset);
        stage_of_.assign(n, -1);
        return;
      }
      const double w = cfg_.stage_caps_w[s];
      caps_w_[g] = std::isnan(w) ? info.gpus[g].default_cap_w : w;
      stage_of_[g] = static_cast<int>(s);
    }
  }
}

Command PlanCapsController::update(const Observation&) {
  Command c;
  if (mapping_.ok()) c.power_cap_w = caps_w_;
  return c;
}

}  // namespace fw
