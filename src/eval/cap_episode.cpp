#include "eval/cap_episode.hpp"

#include "control/control_loop.hpp"

namespace fw::eval {

Result<CapEpisode> run_cap_episode(const sim::Scenario& scenario, uint64_t seed,
                                   Controller* controller) {
  auto plant = sim::make_plant(scenario, seed);
  LoopConfig cfg;
  cfg.sample_period_s = scenario.sample_period_s;
  cfg.duration_s = scenario.duration_s;
  cfg.history_s = 150;
  cfg.windows_s = {30};
  ControlLoop loop(*plant, scenario.budget, cfg);
  if (controller != nullptr) loop.add_controller(controller);
  FW_RETURN_IF_ERROR(loop.run());
  const EpisodeResult r = loop.result();
  return CapEpisode{r.energy_j, r.tokens, r.duration_s};
}

CapScore score_against(const CapEpisode& run, const CapEpisode& base) {
  CapScore s;
  if (base.tokens <= 0 || base.energy_j <= 0 || run.tokens <= 0) {
    s.throughput_lost = base.tokens > 0 ? 1 - run.tokens / base.tokens : 0;
    return s;
  }
  const double e_tok = run.energy_j / run.tokens, e0_tok = base.energy_j / base.tokens;
  s.energy_saved = 1 - e_tok / e0_tok;
  s.throughput_lost = 1 - run.tokens / base.tokens;
  s.edp_change = (1 - s.energy_saved) / (1 - s.throughput_lost) - 1;
  return s;
}

}  // namespace fw::eval
