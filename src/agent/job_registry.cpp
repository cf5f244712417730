#include "agent/job_registry.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fw::agent {

JobAnnouncements age_announcements(const JobAnnouncements& reported, double age_s,
                                   double stale_after_s) {
  if (stale_after_s > 0 && age_s > stale_after_s) return {};
  JobAnnouncements now = reported;  // iterations and the checkpoint's length as reported
  const double since_s = std::max(0.0, age_s);
  // NaN (not announced) stays NaN: std::max(0, NaN - x) would give 0.
  if (!std::isnan(now.starts_in_s)) now.starts_in_s = std::max(0.0, now.starts_in_s - since_s);
  if (!std::isnan(now.ends_in_s)) now.ends_in_s = std::max(0.0, now.ends_in_s - since_s);
  if (!std::isnan(now.step_age_s)) now.step_age_s += since_s;  // the step's age grows
  return now;
}

void JobRegistry::set_announcement_stale_after_s(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  announcement_stale_s_ = s;
}

JobRegistry::JobRegistry(size_t max_jobs, std::function<double()> now_s)
    : max_jobs_(max_jobs), now_s_(std::move(now_s)) {
  if (!now_s_) {
    now_s_ = [] { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); };
  }
}

const JobRegistry::Entry* JobRegistry::find(const std::string& id) const {
  for (const auto& e : jobs_) {
    if (e.state.id == id) return &e;
  }
  return nullptr;
}

JobRegistry::Entry* JobRegistry::find(const std::string& id) {
  return const_cast<Entry*>(std::as_const(*this).find(id));
}

void JobRegistry::set_gpu_indices(std::vector<int> indices) {
  std::lock_guard<std::mutex> lock(mu_);
  gpu_indices_ = std::move(indices);
}

std::vector<int> JobRegistry::gpu_indices() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gpu_indices_;
}

void JobRegistry::set_gpu_ids(std::vector<GpuId> ids) {
  std::lock_guard<std::mutex> lock(mu_);
  gpu_ids_ = std::move(ids);
}

Result<std::vector<int>> JobRegistry::resolve_uuids(const std::vector<std::string>& uuids) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> out;
  for (const std::string& u : uuids) {
    auto it =
        std::find_if(gpu_ids_.begin(), gpu_ids_.end(), [&](const GpuId& g) { return g.uuid == u; });
    if (it == gpu_ids_.end()) {
      std::string have;
      for (const GpuId& g : gpu_ids_) have += (have.empty() ? "" : ", ") + g.uuid;
      return Status::NotFound("gpus: " + u + " is not a GPU this agent manages (" + have + ")");
    }
    out.push_back(it->index);
  }
  return out;
}

JobRegistry::Outcome JobRegistry::add(const std::string& id, JobInfo info, bool fill) {
  std::lock_guard<std::mutex> lock(mu_);
  if (find(id)) return Outcome::kExists;
  if (jobs_.size() >= max_jobs_) return Outcome::kFull;
  if (!gpu_indices_.empty()) {
    for (int g : info.gpus) {
      if (std::find(gpu_indices_.begin(), gpu_indices_.end(), g) == gpu_indices_.end()) {
        return Outcome::kUnknownGpu;
      }
    }
  }
  Entry e;
  e.state.id = id;
  e.state.name = info.name;
  e.state.kind = info.kind;
  e.state.knobs = info.default_knobs;
  e.state.fill = fill;
  e.last_report_s = now_s_();
  e.info = std::move(info);
  jobs_.push_back(std::move(e));
  ++generation_;
  return Outcome::kOk;
}

JobRegistry::Outcome JobRegistry::remove(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it =
        std::find_if(jobs_.begin(), jobs_.end(), [&](const Entry& e) { return e.state.id == id; });
    if (it == jobs_.end()) return Outcome::kNotFound;
    jobs_.erase(it);
    ++generation_;
  }
  cv_.notify_all();
  return Outcome::kOk;
}

JobRegistry::Outcome JobRegistry::report(const std::string& id, const JobProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = find(id);
  if (!e) return Outcome::kNotFound;
  if (p.tokens_total < e->state.tokens_total || p.steps_total < e->state.steps_total) {
    return Outcome::kRegressed;
  }
  e->state.tokens_total = p.tokens_total;
  e->state.steps_total = p.steps_total;
  if (p.phase) e->state.phase = std::string(phase_name(*p.phase));
  e->reported = p.announced;  // whole: what this report leaves out is unknown
  e->last_report_s = now_s_();
  return Outcome::kOk;
}

JobRegistry::Outcome JobRegistry::set_pfi(const std::string& id, double pfi,
                                          const std::string& source) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = find(id);
  if (!e) return Outcome::kNotFound;
  e->state.pfi = pfi;
  e->state.pfi_source = source;
  return Outcome::kOk;
}

bool JobRegistry::set_knobs(const std::string& id, const KnobValues& k) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry* e = find(id);
    if (!e) return false;
    for (int i = 0; i < kNumKnobs; ++i) {
      if (!std::isfinite(k[i])) continue;
      const KnobRange& r = e->info.knob_ranges[i];
      if (!r.available) continue;  // the job did not declare this knob
      // On the job's ladder (min + n·step), rounded down: never more than the controller asked.
      double v = std::clamp(k[i], r.min, r.max);
      if (r.step > 0) v = r.min + std::floor((v - r.min) / r.step + 1e-9) * r.step;
      if (!(e->state.knobs[i] == v)) {
        e->state.knobs[i] = v;
        changed = true;
      }
    }
    if (changed) ++e->state.knob_version;
  }
  if (changed) cv_.notify_all();
  return true;
}

bool JobRegistry::update_handed(const std::string& id, const std::function<bool(Entry&)>& apply) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry* e = find(id);
    if (!e) return false;
    changed = apply(*e);
    if (changed) ++e->state.knob_version;
  }
  if (changed) cv_.notify_all();
  return true;
}

bool JobRegistry::set_fill(const std::string& id, const std::map<int, double>& fill_w) {
  bool hooked = false;
  const bool known = update_handed(id, [&](Entry& e) {
    hooked = e.state.fill;
    bool changed = false;
    for (const auto& [gpu, w] : fill_w) {
      if (!hooked || !std::isfinite(w)) continue;
      auto it = e.state.fill_w.find(gpu);
      if (it != e.state.fill_w.end() && it->second == w) continue;
      e.state.fill_w[gpu] = w;
      changed = true;
    }
    return changed;
  });
  return known && hooked;
}

bool JobRegistry::set_paused(const std::string& id, bool paused) {
  return update_handed(id, [&](Entry& e) {
    const bool changed = e.state.paused != paused;
    e.state.paused = paused;
    return changed;
  });
}

bool JobRegistry::set_gate(const std::string& id, double RegisteredJob::*gate, double unix_s) {
  return update_handed(id, [&](Entry& e) {
    const bool changed = e.state.*gate != unix_s;
    e.state.*gate = unix_s;
    return changed;
  });
}

bool JobRegistry::set_start_at(const std::string& id, double start_at_unix_s) {
  return set_gate(id, &RegisteredJob::start_at_unix_s, start_at_unix_s);
}

bool JobRegistry::set_stop_at(const std::string& id, double stop_at_unix_s) {
  return set_gate(id, &RegisteredJob::stop_at_unix_s, stop_at_unix_s);
}

RegisteredJob JobRegistry::view(const Entry& e, double now_s) const {
  RegisteredJob s = e.state;
  s.last_report_age_s = std::max(0.0, now_s - e.last_report_s);
  s.announced = age_announcements(e.reported, s.last_report_age_s, announcement_stale_s_);
  return s;
}

std::vector<RegisteredJob> JobRegistry::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  double now = now_s_();
  std::vector<RegisteredJob> out;
  out.reserve(jobs_.size());
  for (const auto& e : jobs_) out.push_back(view(e, now));
  return out;
}

std::vector<std::pair<std::string, JobInfo>> JobRegistry::infos() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, JobInfo>> out;
  for (const auto& e : jobs_) out.emplace_back(e.state.id, e.info);
  return out;
}

uint64_t JobRegistry::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

std::optional<RegisteredJob> JobRegistry::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = find(id);
  if (!e) return std::nullopt;
  return view(*e, now_s_());
}

std::optional<RegisteredJob> JobRegistry::wait_knobs(const std::string& id, uint64_t since,
                                                     Clock::time_point deadline,
                                                     const std::function<bool()>& cancel) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [&] {
    const Entry* e = find(id);
    return !e || e->state.knob_version > since || (cancel && cancel());
  });
  const Entry* e = find(id);
  if (!e) return std::nullopt;
  return view(*e, now_s_());
}

void JobRegistry::wake_all() const {
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
}

}  // namespace fw::agent
