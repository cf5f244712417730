#include "control/observation.hpp"

#include <algorithm>
#include <vector>

namespace fw {

size_t Observation::samples_in(double span_s) const {
  const size_t n = history->size();
  size_t k = 1;
  const double cutoff = time_s - span_s + 1e-9;
  while (k < n && history->at_age(k).time_s > cutoff) ++k;
  return k;
}

double Observation::unit_mean_w(size_t u, double span_s) const {
  const size_t k = samples_in(span_s);
  double sum = 0;
  for (size_t a = 0; a < k; ++a) sum += unit_power_w(history->at_age(a), units->units[u]);
  return sum / static_cast<double>(k);
}

double Observation::worst_ratio(double span_s) const {
  double worst = 0;
  for (size_t u = 0; u < units->size(); ++u) {
    worst = std::max(worst, unit_mean_w(u, span_s) / budget->watts);
  }
  return worst;
}

double Observation::job_ratio(size_t job, double span_s) const {
  if (job >= units->units_of_job.size() || units->units_of_job[job].empty()) {
    return worst_ratio(span_s);
  }
  double worst = 0;
  for (int u : units->units_of_job[job]) {
    worst = std::max(worst, unit_mean_w(static_cast<size_t>(u), span_s) / budget->watts);
  }
  return worst;
}

double Observation::job_peak_ratio(size_t job, double window_s, double lookback_s) const {
  const size_t w = std::max<size_t>(1, samples_in(window_s));
  const size_t total = samples_in(window_s + lookback_s);
  std::vector<int> all;
  const std::vector<int>* list = nullptr;
  if (job < units->units_of_job.size() && !units->units_of_job[job].empty()) {
    list = &units->units_of_job[job];
  } else {
    for (size_t u = 0; u < units->size(); ++u) all.push_back(static_cast<int>(u));
    list = &all;
  }
  double worst = 0;
  for (int u : *list) {
    const auto& gpus = units->units[static_cast<size_t>(u)];
    if (total <= w) {
      worst = std::max(worst, unit_mean_w(static_cast<size_t>(u), window_s) / budget->watts);
      continue;
    }
    // Sliding sum over ages [a, a + w), a = 0 … total − w.
    double sum = 0;
    for (size_t a = 0; a < w; ++a) sum += unit_power_w(history->at_age(a), gpus);
    double best = sum;
    for (size_t a = 1; a + w <= total; ++a) {
      sum += unit_power_w(history->at_age(a + w - 1), gpus) -
             unit_power_w(history->at_age(a - 1), gpus);
      best = std::max(best, sum);
    }
    worst = std::max(worst, best / static_cast<double>(w) / budget->watts);
  }
  return worst;
}

}  // namespace fw
