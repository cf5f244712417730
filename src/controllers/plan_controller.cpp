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
                                        const PlantInfo& info, bool follow_schedule) {
  PlanCapsConfig c;
  for (const pipeline::PlannedStageCap& s : plan.constant)
    c.stage_caps_w.push_back(s.uncapped ? kUnset : s.cap_w);
  c.job = job;
  c.period_s = period_s;
  if (follow_schedule && plan.best_mode == "schedule" && plan.schedule_switches &&
      plan.schedule.size() == plan.constant.size() && plan.schedule_time_s > 0) {
    for (const auto& stage : plan.schedule) {
      std::vector<PlanSegmentCap> segs;
      for (const pipeline::ScheduledCap& g : stage) {
        double f = g.start_s / plan.schedule_time_s;
        if (f >= 1) f -= 1;  // a start at the iteration's end is the next one's start
        segs.push_back({g.uncapped ? kUnset : g.cap_w, f});
      }
      std::sort(segs.begin(), segs.end(), [](const PlanSegmentCap& a, const PlanSegmentCap& b) {
        return a.start_frac < b.start_frac;
      });
      c.schedule.push_back(std::move(segs));
    }
  }
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
  if (!cfg.schedule.empty()) {
    if (cfg.schedule.size() != cfg.stage_caps_w.size()) {
      return Status::InvalidArgument(
          "plan: the schedule lists " + std::to_string(cfg.schedule.size()) +
          " stages; the plan has " + std::to_string(cfg.stage_caps_w.size()));
    }
    for (const auto& segs : cfg.schedule) {
      if (segs.empty()) return Status::InvalidArgument("plan: a stage of the schedule is empty");
      double last = -1;
      for (const PlanSegmentCap& g : segs) {
        if (!(g.start_frac >= 0 && g.start_frac < 1) || g.start_frac < last) {
          return Status::InvalidArgument("plan: segment starts must lie in [0, 1), in order");
        }
        if (!std::isnan(g.cap_w) && !(g.cap_w > 0 && std::isfinite(g.cap_w))) {
          return Status::InvalidArgument("plan: a segment cap is not > 0");
        }
        last = g.start_frac;
      }
    }
  }
  if (!(cfg.lead_down_s >= 0 && cfg.lead_down_s <= cfg.lead_up_s && std::isfinite(cfg.lead_up_s))) {
    return Status::InvalidArgument("plan: needs 0 <= lead_down_s <= lead_up_s");
  }
  if (!(cfg.min_segment_s >= 0)) return Status::InvalidArgument("plan: min_segment_s < 0");
  return PlanCapsController(cfg);
}

void PlanCapsController::reset(const PlantInfo& info) {
  const size_t n = info.gpus.size();
  const size_t S = cfg_.stage_caps_w.size();
  caps_w_.assign(n, kUnset);
  default_w_.assign(n, kUnset);
  for (size_t g = 0; g < n; ++g) default_w_[g] = info.gpus[g].default_cap_w;
  stage_of_.assign(n, -1);
  mapping_ = Status::Ok();
  following_ =
      Status::Unavailable(cfg_.schedule.empty() ? "no schedule: constant caps" : "not updated yet");
  last_steps_ = -1;
  step_s_ = 0;
  boundaries_.clear();
  // The shortest segment of a stage whose segments hold different caps (the others never switch).
  shortest_frac_ = 1;
  for (const auto& segs : cfg_.schedule) {
    bool switches = false;
    for (const PlanSegmentCap& g : segs) {
      const bool same = std::isnan(g.cap_w) ? std::isnan(segs[0].cap_w) : g.cap_w == segs[0].cap_w;
      switches |= !same;
    }
    if (!switches) continue;
    for (size_t k = 0; k < segs.size(); ++k) {
      const double next = k + 1 < segs.size() ? segs[k + 1].start_frac : segs[0].start_frac + 1;
      shortest_frac_ = std::min(shortest_frac_, next - segs[k].start_frac);
    }
  }
  std::vector<std::vector<int>> blocks = cfg_.stage_gpus;
  const JobInfo* job =
      static_cast<size_t>(cfg_.job) < info.jobs.size() ? &info.jobs[cfg_.job] : nullptr;
  if (blocks.empty() && job && !job->pipeline_stages.empty()) {
    // The job's own stage per GPU (its registration): this node's share of the plan.
    blocks.assign(S, {});
    for (size_t i = 0; i < job->gpus.size() && i < job->pipeline_stages.size(); ++i) {
      const int s = job->pipeline_stages[i];
      if (s < 0 || static_cast<size_t>(s) >= S) {
        mapping_ = Status::InvalidArgument(
            "plan: job " + std::to_string(cfg_.job) + " registered GPU " +
            std::to_string(job->gpus[i]) + " at pipeline stage " + std::to_string(s) +
            "; the plan has " + std::to_string(S) + " stages (0-" + std::to_string(S - 1) + ")");
        return;
      }
      blocks[s].push_back(job->gpus[i]);
    }
  } else if (blocks.empty()) {
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

double PlanCapsController::max_cap_over(size_t s, double a, double b, double default_w) const {
  const std::vector<PlanSegmentCap>& segs = cfg_.schedule[s];
  auto cap = [&](const PlanSegmentCap& g) { return std::isnan(g.cap_w) ? default_w : g.cap_w; };
  const double fa = a - std::floor(a), span = b - a;
  // The segment in force at fa: the last one starting at or before it, else (wrapped) the last.
  size_t at = segs.size() - 1;
  for (size_t k = 0; k < segs.size(); ++k) {
    if (segs[k].start_frac <= fa) at = k;
  }
  double w = cap(segs[at]);
  for (size_t k = 1; k < segs.size(); ++k) {
    const PlanSegmentCap& g = segs[(at + k) % segs.size()];
    double d = g.start_frac - fa;
    if (d < 0) d += 1;
    if (d <= span) w = std::max(w, cap(g));
  }
  return w;
}

// Why the schedule cannot be followed now (Ok: it can); boundaries_ non-empty.
Status PlanCapsController::schedule_usable() const {
  if (!(step_s_ > 0))
    return Status::Unavailable("step time not measured yet (two step boundaries)");
  if (shortest_frac_ * step_s_ < cfg_.min_segment_s) {
    return Status::Unavailable("a segment lasts " + std::to_string(shortest_frac_ * step_s_) +
                               " s at the measured step time of " + std::to_string(step_s_) +
                               " s, under min_segment_s " + std::to_string(cfg_.min_segment_s));
  }
  return Status::Ok();
}

Command PlanCapsController::update(const Observation& obs) {
  Command c;
  if (!mapping_.ok()) return c;
  c.power_cap_w = caps_w_;
  if (cfg_.schedule.empty()) return c;  // following_ says so since reset()
  const Snapshot& snap = obs.latest();
  if (static_cast<size_t>(cfg_.job) >= snap.jobs.size() ||
      snap.jobs[cfg_.job].phase == Phase::kIdle) {
    following_ = Status::Unavailable("the job is idle");
    return c;
  }
  const JobReading& jr = snap.jobs[cfg_.job];
  // A step boundary: the step count grew (the first busy sample only where the job says how
  // old its step is). At step_age_s before the read where announced, else half a period back.
  const bool first = last_steps_ < 0;
  const bool aged = std::isfinite(jr.step_age_s);
  if ((first && aged) || (!first && jr.steps_total > last_steps_)) {
    const double at_s = aged ? obs.time_s - jr.step_age_s : obs.time_s - 0.5 * obs.sample_period_s;
    boundaries_.emplace_back(at_s, jr.steps_total);
    if (boundaries_.size() > kStepsKept) boundaries_.erase(boundaries_.begin());
    const auto& [t0, n0] = boundaries_.front();
    const auto& [t1, n1] = boundaries_.back();
    if (n1 > n0 && t1 > t0) step_s_ = (t1 - t0) / (n1 - n0);
  }
  last_steps_ = jr.steps_total;
  if (boundaries_.empty()) {
    following_ = Status::Unavailable("no step boundary seen yet");
    return c;
  }
  const double since_s = obs.time_s - boundaries_.back().first;
  following_ = schedule_usable();
  if (following_.ok() && since_s > 2 * step_s_) {
    following_ = Status::Unavailable("the newest step boundary is older than two step times");
  }
  if (!following_.ok()) return c;
  const double t = std::fmod(std::max(0.0, since_s), step_s_);
  const double a = (t + cfg_.lead_down_s) / step_s_, b = (t + cfg_.lead_up_s) / step_s_;
  for (size_t g = 0; g < caps_w_.size(); ++g) {
    if (stage_of_[g] < 0) continue;
    c.power_cap_w[g] = max_cap_over(static_cast<size_t>(stage_of_[g]), a, b, default_w_[g]);
  }
  return c;
}

}  // namespace fw
