#include "eval/token_bound.hpp"

#include <algorithm>
#include <cmath>

#include "control/actuator.hpp"
#include "control/budget_units.hpp"
#include "control/control_loop.hpp"
#include "controllers/static_controller.hpp"

namespace fw::eval {

double concave_frontier(std::vector<std::pair<double, double>> pts, double p) {
  pts.emplace_back(0.0, 0.0);
  std::sort(pts.begin(), pts.end());
  // Upper hull (monotone chain), then the best rate at power <= p on it.
  std::vector<std::pair<double, double>> h;
  for (const auto& q : pts) {
    while (h.size() >= 2) {
      const auto& a = h[h.size() - 2];
      const auto& b = h.back();
      const double cross =
          (b.first - a.first) * (q.second - a.second) - (b.second - a.second) * (q.first - a.first);
      if (cross < 0) break;  // b stays above the chord a–q
      h.pop_back();
    }
    h.push_back(q);
  }
  double best = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i].first <= p) best = std::max(best, h[i].second);
    if (i + 1 < h.size() && h[i].first <= p && p < h[i + 1].first) {
      const double t = (p - h[i].first) / (h[i + 1].first - h[i].first);
      best = std::max(best, h[i].second + t * (h[i + 1].second - h[i].second));
    }
  }
  return best;
}

Result<TokenBound> token_bound(const sim::Scenario& scenario, uint64_t seed) {
  auto probe = sim::make_plant(scenario, seed);
  if (!probe) return Status::Internal("token bound: could not build the plant");
  const PlantInfo info = probe->info();
  probe.reset();
  const BudgetSchedule& budget = scenario.budget;
  const double n_units =
      static_cast<double>(make_budget_units(info, budget.entries.front().budget.scope).size());
  FW_ASSIGN_OR_RETURN(std::vector<Actuator> knobs, resolve_actuators("all", info));
  std::vector<Actuator> knob_acts;
  for (const Actuator& a : knobs) {
    if (a.kind == Actuator::Kind::kKnob) knob_acts.push_back(a);
  }
  std::vector<std::pair<double, double>> pts;
  const size_t nf = std::size(kBoundFractions);
  size_t combos = 1;
  for (size_t i = 0; i < knob_acts.size(); ++i) combos *= nf;
  for (size_t c = 0; c < combos; ++c) {
    KnobValues hold = kNoKnobs;
    size_t rest = c;
    for (const Actuator& a : knob_acts) {
      hold[a.index()] = job_ladder(info, 0, a).at_fraction(kBoundFractions[rest % nf]);
      rest /= nf;
    }
    for (double cap_f : kBoundFractions) {
      auto plant = sim::make_plant(scenario, seed);
      StaticController ctrl(Actuator::of_index(kCapActuator), cap_f, kUnset, 10, hold);
      LoopConfig lc;
      lc.sample_period_s = scenario.sample_period_s;
      lc.duration_s = scenario.duration_s;
      lc.history_s = 1;
      lc.windows_s = {budget.entries.front().budget.window_s};
      ControlLoop loop(*plant, budget, lc);
      loop.add_controller(&ctrl);
      FW_RETURN_IF_ERROR(loop.run().with_context("token bound"));
      const EpisodeResult& r = loop.result();
      if (r.duration_s > 0) {
        pts.emplace_back(r.mean_power_w / n_units, r.completed_tokens / r.duration_s);
      }
    }
  }
  TokenBound out;
  out.settings = static_cast<int>(pts.size());
  const double w_s = budget.entries.front().budget.window_s;
  for (double t = 0; t < scenario.duration_s - 1e-9; t += w_s) {
    const double len = std::min(w_s, scenario.duration_s - t);
    out.tokens += len * concave_frontier(pts, budget.at(t).watts);
  }
  return out;
}

}  // namespace fw::eval
