#include "controllers/lookahead_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "controllers/static_calibration.hpp"
#include "controllers/uncontrolled_controller.hpp"

namespace fw {
namespace {

// Forwards to the greedy search and records every command it returns.
class RecordingController : public Controller, public PlantBranching {
 public:
  explicit RecordingController(OracleController& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  double period_s() const override { return inner_.period_s(); }
  void reset(const PlantInfo& info) override { inner_.reset(info); }
  void bind_plant(const Plant* plant) override { inner_.bind_plant(plant); }
  Command update(const Observation& obs) override {
    decisions.push_back(inner_.update(obs));
    return decisions.back();
  }
  ActuatorSet claims() const override { return inner_.claims(); }
  std::vector<Command> decisions;

 private:
  OracleController& inner_;
};

Result<EpisodeResult> run_one(const PlantFactory& make_plant, const LookaheadPlanConfig& cfg,
                              uint64_t seed, Controller& ctrl, double history_s) {
  std::unique_ptr<Plant> plant = make_plant(seed);
  if (!plant) return Status::Internal("lookahead: the plant factory returned nothing");
  LoopConfig lc = cfg.loop;
  lc.history_s = history_s;
  ControlLoop loop(*plant, cfg.budget, lc, cfg.limiter);
  loop.add_controller(&ctrl);
  FW_RETURN_IF_ERROR(loop.run().with_context("lookahead plan, seed " + std::to_string(seed)));
  return loop.result();
}

std::string describe(const PlantInfo& info, const std::vector<Actuator>& acts,
                     const std::vector<double>& f) {
  std::string s;
  for (size_t a = 0; a < acts.size(); ++a) {
    char b[64];
    std::snprintf(b, sizeof b, "%s%s=%g", s.empty() ? "" : ",", acts[a].name().c_str(),
                  job_ladder(info, 0, acts[a]).at_fraction(f[a]));
    s += b;
  }
  return s;
}

}  // namespace

std::vector<double> fixed_grid_fractions(const PlantInfo& info, const Actuator& a, int candidates) {
  const Ladder ladder = job_ladder(info, 0, a);
  std::vector<double> out;
  for (const int rung : coarse_rungs(ladder.size(), candidates)) {
    const double f = ladder.max > ladder.min
                         ? (ladder.value(rung) - ladder.min) / (ladder.max - ladder.min)
                         : 1.0;
    if (out.empty() || out.back() != f) out.push_back(f);
  }
  return out;
}

Command fixed_setting_command(const Observation& obs, const std::vector<Actuator>& actuators,
                              const std::vector<double>& fractions) {
  const PlantInfo& info = *obs.plant;
  Command c = UncontrolledController().update(obs);
  for (size_t a = 0; a < actuators.size(); ++a) {
    for (size_t j = 0; j < info.jobs.size(); ++j) {
      const double v = job_ladder(info, j, actuators[a]).at_fraction(fractions[a]);
      set_job_setting(info, j, actuators[a], v, c);
    }
  }
  return c;
}

Command LookaheadController::update(const Observation& obs) {
  if (plan_.fixed) return fixed_setting_command(obs, actuators_, plan_.fractions);
  return next_ < plan_.decisions.size() ? plan_.decisions[next_++] : Command{};
}

ActuatorSet LookaheadController::claims() const {
  ActuatorSet s;
  for (const Actuator& a : actuators_) s.set(a.index());
  return s;
}

Result<LookaheadPlan> plan_lookahead(const PlantFactory& make_plant, const LookaheadPlanConfig& cfg,
                                     uint64_t seed) {
  const std::vector<Actuator>& acts = cfg.greedy.actuators;
  if (acts.empty()) return Status::InvalidArgument("lookahead: no actuator");
  LookaheadPlan plan;
  OracleController greedy(cfg.greedy);
  RecordingController rec(greedy);
  FW_ASSIGN_OR_RETURN(EpisodeResult g, run_one(make_plant, cfg, seed, rec, cfg.loop.history_s));
  plan.decisions = std::move(rec.decisions);
  plan.greedy_completed_tokens = plan.completed_tokens = g.completed_tokens;
  plan.greedy_offset_rate = plan.offset_rate = g.offset_violation_rate;
  plan.description = "greedy";
  if (cfg.fixed_candidates < 2) return plan;

  PlantInfo info;
  {
    std::unique_ptr<Plant> probe = make_plant(seed);
    if (!probe) return Status::Internal("lookahead: the plant factory returned nothing");
    info = probe->info();
  }
  std::vector<std::vector<double>> grid;
  size_t combos = 1;
  for (const Actuator& a : acts) {
    grid.push_back(fixed_grid_fractions(info, a, cfg.fixed_candidates));
    combos *= grid.back().size();
  }
  // Runs one fixed setting; true when admitted. Keeps the best admitted setting (bf, bt).
  std::vector<double> bf;
  double bt = -1;
  auto consider = [&](const std::vector<double>& f) -> Result<bool> {
    LookaheadPlan fixed_plan;
    fixed_plan.fixed = true;
    fixed_plan.fractions = f;
    LookaheadController ctrl(acts, cfg.greedy.period_s, fixed_plan);
    // A fixed setting reads no history: one second of it is enough.
    FW_ASSIGN_OR_RETURN(EpisodeResult r, run_one(make_plant, cfg, seed, ctrl, 1));
    if (!(r.offset_violation_rate <= plan.greedy_offset_rate)) return false;
    if (r.completed_tokens > bt) bf = f, bt = r.completed_tokens;
    if (r.completed_tokens > plan.completed_tokens) {
      plan.fixed = true;
      plan.fractions = f;
      plan.completed_tokens = r.completed_tokens;
      plan.offset_rate = r.offset_violation_rate;
      plan.description = describe(info, acts, f);
    }
    return true;
  };
  std::vector<double> f(acts.size());
  for (size_t combo = 0; combo < combos; ++combo) {
    size_t rest = combo;  // digit a (mixed radix) picks actuator a's rung
    for (size_t a = 0; a < acts.size(); ++a) {
      f[a] = grid[a][rest % grid[a].size()];
      rest /= grid[a].size();
    }
    FW_ASSIGN_OR_RETURN(bool admitted, consider(f));
    ++plan.fixed_tried;
    plan.fixed_admitted += admitted ? 1 : 0;
  }
  // Refinement, one actuator at a time: from the best admitted grid setting, bisect on job
  // 0's rungs between its fraction and the next grid fraction above (admission assumed
  // monotone there), at most 6 episodes each, as the calibration and the greedy do.
  for (size_t a = 0; bt >= 0 && a < acts.size(); ++a) {
    const Ladder ladder = job_ladder(info, 0, acts[a]);
    auto above = std::upper_bound(grid[a].begin(), grid[a].end(), bf[a]);
    if (above == grid[a].end() || !(ladder.max > ladder.min)) continue;
    double lo = bf[a], hi = *above;
    for (int it = 0; it < 6; ++it) {
      const double v = ladder.at_fraction(0.5 * (lo + hi));
      const double mid = (v - ladder.min) / (ladder.max - ladder.min);
      if (!(mid > lo && mid < hi)) break;  // no rung left between lo and hi
      std::vector<double> g = bf;
      g[a] = mid;
      FW_ASSIGN_OR_RETURN(bool admitted, consider(g));
      ++plan.refined_tried;
      (admitted ? lo : hi) = mid;
    }
  }
  if (plan.fixed) plan.decisions.clear();
  return plan;
}

}  // namespace fw
