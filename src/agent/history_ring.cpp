#include "agent/history_ring.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace fw::agent {
namespace {

// Watts to the milliwatt (the float samples would print 9 noise digits); NaN as null.
nlohmann::json num(double v) {
  return std::isfinite(v) ? nlohmann::json(std::round(v * 1000) / 1000) : nlohmann::json();
}

}  // namespace

HistoryRing::HistoryRing(size_t capacity, double spacing_s)
    : capacity_(std::max<size_t>(1, capacity)), spacing_s_(spacing_s) {}

void HistoryRing::add(const AgentState& s) {
  Sample x;
  x.t_unix_s = s.time_unix_s;
  x.node_w = s.node_power_w;
  x.budget_w = s.budget.watts;
  if (s.budget.scope == "gpu") x.budget_w *= static_cast<double>(s.gpus.size());
  const WindowState w = s.windows.empty() ? WindowState{} : s.windows.front();
  x.mean_w = s.windows.empty() ? kUnset : w.mean_w;
  x.violations_total = w.violations_total;
  x.fallback = s.fallback_reason;
  for (const auto& g : s.gpus) {
    x.gpu_index.push_back(g.index);
    x.gpu_power_w.push_back(static_cast<float>(g.power_w));
    x.gpu_cap_w.push_back(static_cast<float>(g.cap_w));
  }
  for (const RegisteredJob& j : s.jobs) {
    x.jobs.push_back({j.id, j.name, j.tokens_total, j.steps_total, j.knobs});
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!ring_.empty() && x.t_unix_s - ring_.back().t_unix_s < spacing_s_) return;
  if (!s.windows.empty()) window_s_ = w.window_s;
  ring_.push_back(std::move(x));
  while (ring_.size() > capacity_) ring_.pop_front();
}

size_t HistoryRing::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_.size();
}

nlohmann::json HistoryRing::to_json(double span_s, size_t max_points) const {
  max_points = std::clamp<size_t>(max_points, 1, kMaxPoints);
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json t = nlohmann::json::array(), node = nlohmann::json::array(),
                 budget = nlohmann::json::array(), mean = nlohmann::json::array(),
                 viol = nlohmann::json::array(), fb = nlohmann::json::array();
  // GPUs by index, in the order first seen; a GPU missing from a sample is null there.
  std::vector<int> indices;
  size_t first = ring_.size();
  if (!ring_.empty()) {
    const double t0 = ring_.back().t_unix_s - span_s;
    first = static_cast<size_t>(
        std::lower_bound(ring_.begin(), ring_.end(), t0,
                         [](const Sample& a, double v) { return a.t_unix_s < v; }) -
        ring_.begin());
  }
  const size_t n = ring_.size() - first;
  const size_t stride = n == 0 ? 1 : (n + max_points - 1) / max_points;
  std::vector<size_t> picked;
  // Every stride-th sample counted back from the newest, so the newest is always in.
  for (size_t k = 0; k < n; k += stride) picked.push_back(ring_.size() - 1 - k);
  std::reverse(picked.begin(), picked.end());
  for (size_t i : picked) {
    for (int g : ring_[i].gpu_index) {
      if (std::find(indices.begin(), indices.end(), g) == indices.end()) indices.push_back(g);
    }
  }
  std::vector<nlohmann::json> gp(indices.size(), nlohmann::json::array()),
      gc(indices.size(), nlohmann::json::array());
  for (size_t i : picked) {
    const Sample& x = ring_[i];
    t.push_back(x.t_unix_s);
    node.push_back(num(x.node_w));
    budget.push_back(num(x.budget_w));
    mean.push_back(num(x.mean_w));
    viol.push_back(x.violations_total);
    fb.push_back(x.fallback);
    for (size_t k = 0; k < indices.size(); ++k) {
      auto at = std::find(x.gpu_index.begin(), x.gpu_index.end(), indices[k]);
      if (at == x.gpu_index.end()) {
        gp[k].push_back(nullptr);
        gc[k].push_back(nullptr);
      } else {
        const auto j = static_cast<size_t>(at - x.gpu_index.begin());
        gp[k].push_back(num(x.gpu_power_w[j]));
        gc[k].push_back(num(x.gpu_cap_w[j]));
      }
    }
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (size_t k = 0; k < indices.size(); ++k) {
    gpus.push_back(
        {{"index", indices[k]}, {"power_w", std::move(gp[k])}, {"cap_w", std::move(gc[k])}});
  }
  return with_jobs({{"span_s", span_s},
                    {"spacing_s", spacing_s_},
                    {"stride", stride},
                    {"capacity", capacity_},
                    {"count", picked.size()},
                    {"window_s", num(window_s_)},
                    {"t_unix_s", std::move(t)},
                    {"node_power_w", std::move(node)},
                    {"budget_w", std::move(budget)},
                    {"mean_w", std::move(mean)},
                    {"violations_total", std::move(viol)},
                    {"fallback_reason", std::move(fb)},
                    {"gpus", std::move(gpus)}},
                   picked);
}

nlohmann::json HistoryRing::with_jobs(nlohmann::json out, const std::vector<size_t>& picked) const {
  // Jobs by id in the order first seen; which knobs any answered sample set.
  std::vector<std::pair<std::string, std::string>> ids;  // id, name (the latest seen)
  std::array<bool, kNumKnobs> set{};
  for (size_t i : picked) {
    for (const JobSample& j : ring_[i].jobs) {
      auto it =
          std::find_if(ids.begin(), ids.end(), [&](const auto& e) { return e.first == j.id; });
      if (it == ids.end()) {
        ids.emplace_back(j.id, j.name);
      } else {
        it->second = j.name;
      }
      for (int q = 0; q < kNumKnobs; ++q) set[q] = set[q] || std::isfinite(j.knobs[q]);
    }
  }
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& [id, name] : ids) {
    nlohmann::json tok = nlohmann::json::array(), steps = nlohmann::json::array();
    nlohmann::json knobs = nlohmann::json::object();
    for (int q = 0; q < kNumKnobs; ++q) {
      if (set[q]) knobs[std::string(kKnobNames[q])] = nlohmann::json::array();
    }
    for (size_t i : picked) {
      const auto& js = ring_[i].jobs;
      auto at = std::find_if(js.begin(), js.end(), [&](const JobSample& j) { return j.id == id; });
      const bool here = at != js.end();
      tok.push_back(here ? num(at->tokens_total) : nlohmann::json(nullptr));
      steps.push_back(here ? num(at->steps_total) : nlohmann::json(nullptr));
      for (int q = 0; q < kNumKnobs; ++q) {
        if (set[q]) knobs[std::string(kKnobNames[q])].push_back(here ? num(at->knobs[q]) : nullptr);
      }
    }
    jobs.push_back({{"id", id},
                    {"name", name},
                    {"tokens_total", std::move(tok)},
                    {"steps_total", std::move(steps)},
                    {"knobs", std::move(knobs)}});
  }
  out["jobs"] = std::move(jobs);
  return out;
}

}  // namespace fw::agent
