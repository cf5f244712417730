#pragma once
// JobRegistry: the training-framework channel. Jobs register over the API, report their
// cumulative progress, and read the knobs the agent's controller set for them (long-poll).
// The control path reads the jobs (infos(), snapshot()) each tick and hands knobs back
// with set_knobs(); a job that stops reporting shows a growing last_report_age_s, which
// the loop uses to fall back to the job's default knobs.
//
// Thread-safety: every member is safe to call from any thread. Time comes from the clock
// given at construction (seconds, monotonic), so tests can drive it.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_state.hpp"
#include "control/plant.hpp"
#include "core/status.hpp"

namespace fw::agent {

struct JobProgress {
  double tokens_total = 0;     // cumulative, non-decreasing
  double steps_total = 0;      // cumulative, non-decreasing
  std::optional<Phase> phase;  // unset: unchanged
  // As of this report. A report replaces the last one's announcements whole: a field it leaves
  // out is unknown from then on (not kept from an earlier report).
  JobAnnouncements announced;
};

// How long a report's announcements hold where the agent sets no job_silent_after_s (0: the
// job never counts as silent): the agent's default job_silent_after_s.
inline constexpr double kDefaultAnnouncementStaleS = 60;

// A report's announcements `age_s` seconds after it arrived, as the controllers read them:
// starts_in_s and ends_in_s less age_s, at least 0 (the start or end is due; a job still idle or
// still training past it keeps reading 0 until it reports again); checkpoint_in_iters and
// checkpoint_s as reported (iterations and a length, not a time left: they change with the
// next report only); step_age_s plus age_s (the iteration under way keeps ageing until the
// next report names a new one). Every field NaN once age_s > stale_after_s (a job that stopped
// reporting: what it announced no longer says anything about now); stale_after_s <= 0: never stale.
JobAnnouncements age_announcements(const JobAnnouncements& reported, double age_s,
                                   double stale_after_s);

class JobRegistry {
 public:
  enum class Outcome { kOk, kNotFound, kExists, kFull, kRegressed, kUnknownGpu };
  using Clock = std::chrono::steady_clock;

  explicit JobRegistry(size_t max_jobs = 64, std::function<double()> now_s = {});

  // Registers job `id` (unique) with its declared knob ranges; its knobs start at
  // info.default_knobs. kExists / kFull when refused; kUnknownGpu when info.gpus names an index
  // outside set_gpu_indices() (the GPUs this node manages).
  // fill: the job's client runs the fill hook (RegisteredJob::fill).
  Outcome add(const std::string& id, JobInfo info, bool fill = false);
  // The GPU indices a job may list (the node's managed NVML indices); empty (the default):
  // any. Set once by the agent before it serves requests.
  void set_gpu_indices(std::vector<int> indices);
  std::vector<int> gpu_indices() const;
  // The node's GPUs by identity (uuid -> NVML index, from NodePlant::node_gpus()): what a job
  // that registers GPUs by UUID is resolved against. Set once before requests are served.
  struct GpuId {
    std::string uuid;
    int index = -1;
  };
  void set_gpu_ids(std::vector<GpuId> ids);
  // The NVML indices of `uuids`, in order; NotFound naming the first UUID this node does not
  // have (and the ones it has).
  Result<std::vector<int>> resolve_uuids(const std::vector<std::string>& uuids) const;
  Outcome remove(const std::string& id);
  // kRegressed when tokens or steps go below the last report (nothing is changed then).
  Outcome report(const std::string& id, const JobProgress& p);

  // Control path: sets the knobs job `id` should use (NaN: keep). Bumps its knob_version
  // and wakes its long-pollers when a value changed. Values are clamped to the declared
  // range and rounded down to its step. Returns false for an unknown id.
  bool set_knobs(const std::string& id, const KnobValues& k);
  // Control path: the fill targets of job `id`'s GPUs (NVML index -> W; 0: off), merged into
  // the ones it has. Bumps knob_version and wakes its long-pollers when a value changed (the
  // client reads them with its knobs). False for an unknown id or a job without the hook.
  bool set_fill(const std::string& id, const std::map<int, double>& fill_w);
  // Control path: job `id` is paused (or resumed) by the coordinator. Bumps knob_version and
  // wakes its long-pollers on a change. False for an unknown id.
  bool set_paused(const std::string& id, bool paused);
  // Control path: job `id`'s start gate (unix s; 0: none). Bumps knob_version and wakes its
  // long-pollers on a change. False for an unknown id.
  bool set_start_at(const std::string& id, double start_at_unix_s);
  // Control path: job `id`'s stop gate (unix s; 0: none), as set_start_at.
  bool set_stop_at(const std::string& id, double stop_at_unix_s);
  // Records job `id`'s PFI and where it came from ("registration", "sweep"). kNotFound.
  Outcome set_pfi(const std::string& id, double pfi, const std::string& source);
  // How long a report's announcements hold (age_announcements()); the agent sets its
  // job_silent_after_s (kDefaultAnnouncementStaleS where that is 0). Default
  // kDefaultAnnouncementStaleS.
  void set_announcement_stale_after_s(double s);
  // Every job in registration order, with last_report_age_s and announced (aged to now)
  // filled in.
  std::vector<RegisteredJob> snapshot() const;
  // Declared information of every job, in the same order as snapshot().
  std::vector<std::pair<std::string, JobInfo>> infos() const;
  // Bumped on every add/remove, so the loop can tell that the job set changed.
  uint64_t generation() const;

  // One job's state; nullopt for an unknown id.
  std::optional<RegisteredJob> get(const std::string& id) const;
  // Waits until job `id`'s knob_version > since, the deadline passes, the job is removed,
  // or `cancel` (may be empty) returns true after wake_all(). Returns the job's state
  // (nullopt when unknown or removed).
  std::optional<RegisteredJob> wait_knobs(const std::string& id, uint64_t since,
                                          Clock::time_point deadline,
                                          const std::function<bool()>& cancel = {}) const;
  void wake_all() const;

 private:
  struct Entry {
    JobInfo info;
    RegisteredJob state;
    double last_report_s = 0;
    JobAnnouncements reported;  // the last report's, as of last_report_s
  };
  // What the control path hands job `id` (set_fill, set_paused, set_start_at, set_stop_at):
  // `apply` changes its entry under the lock and says whether anything changed; a change bumps
  // knob_version and wakes the long-pollers. False for an unknown id.
  bool update_handed(const std::string& id, const std::function<bool(Entry&)>& apply);
  // One of the coordinator's gates (a RegisteredJob member) through update_handed.
  bool set_gate(const std::string& id, double RegisteredJob::*gate, double unix_s);
  const Entry* find(const std::string& id) const;
  Entry* find(const std::string& id);
  // e's state at now_s: its report age and announcements aged. Call with mu_ held.
  RegisteredJob view(const Entry& e, double now_s) const;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<Entry> jobs_;
  std::vector<int> gpu_indices_;
  std::vector<GpuId> gpu_ids_;
  size_t max_jobs_;
  uint64_t generation_ = 0;
  double announcement_stale_s_ = kDefaultAnnouncementStaleS;
  std::function<double()> now_s_;
};

}  // namespace fw::agent
