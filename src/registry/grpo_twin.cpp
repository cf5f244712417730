#include "registry/grpo_twin.hpp"

#include <cmath>
#include <limits>

namespace fw::registry {
namespace {
constexpr double kNeverStartsS = 1e12;  // after any horizon
}  // namespace

sim::Scenario twin_scenario(const sim::Scenario& declared, const std::vector<double>& medians,
                            double now_s) {
  sim::Scenario s = declared;
  for (size_t j = 0; j < s.jobs.size(); ++j) {
    sim::JobSpec& js = s.jobs[j];
    const bool present = js.start_s <= now_s + 1e-9 && now_s + 1e-9 < js.end_s;
    js.start_s = present ? 0.0 : kNeverStartsS;
    js.end_s = std::numeric_limits<double>::infinity();
    sim::GrpoParams& g = js.grpo;
    g.completion_len_curve.clear();  // the future: never declared, never seen
    g.stragglers.clear();            // unannounced: the twin knows none
    g.pauses.clear();
    g.curve_shift_s = 0;
    if (j < medians.size() && std::isfinite(medians[j]) && medians[j] > 0) {
      g.completion_median_tokens = medians[j];
    }
  }
  return s;
}

GrpoTwin::GrpoTwin(std::shared_ptr<const sim::Scenario> declared, sim::OnlineFitConfig cfg)
    : declared_(std::move(declared)), cfg_(cfg) {
  for (const sim::JobSpec& j : declared_->jobs) {
    sim::DeclaredGrpoJob d;
    d.grpo = j.kind == sim::JobKind::kGrpo && j.grpo.prompts_per_step > 0;
    d.prompts_per_step = j.grpo.prompts_per_step;
    d.completion_sigma = j.grpo.completion_sigma;
    d.completion_max_tokens = j.grpo.completion_max_tokens;
    d.completion_median_tokens = j.grpo.completion_median_tokens;
    jobs_.push_back(d);
  }
  reset();
}

void GrpoTwin::reset() { fit_ = std::make_unique<sim::OnlineGrpoFit>(jobs_, cfg_); }

void GrpoTwin::observe(const Snapshot& s) { fit_->observe(s); }

Result<MpcTwin::Fit> GrpoTwin::refit(double now_s) {
  const std::vector<sim::JobLengthFit> f = fit_->fit(now_s);
  std::vector<double> medians(f.size(), std::nan(""));
  nlohmann::json jobs = nlohmann::json::array();
  bool any = false;
  for (size_t j = 0; j < f.size(); ++j) {
    if (!jobs_[j].grpo) continue;
    jobs.push_back({{"job", j},
                    {"fitted", f[j].fitted},
                    {"steps", f[j].steps},
                    {"mean_completion_tokens", f[j].mean_tokens},
                    {"median_tokens", f[j].median_tokens}});
    if (f[j].fitted) {
      medians[j] = f[j].median_tokens;
      any = true;
    }
  }
  if (!any) {
    return Status::Unavailable("twin: fewer than " + std::to_string(cfg_.min_steps) +
                               " completed steps in the fit window");
  }
  auto sc = std::make_shared<const sim::Scenario>(twin_scenario(*declared_, medians, now_s));
  Fit out;
  out.plants = [sc](uint64_t seed) { return sim::make_plant(*sc, seed); };
  out.figures = {{"jobs", jobs}, {"window_s", cfg_.window_s}};
  return out;
}

}  // namespace fw::registry
