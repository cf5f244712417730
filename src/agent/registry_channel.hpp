#pragma once
// RegistryChannel: the agent's JobRegistry as the runtime's JobChannel (what NodePlant reads
// jobs and hands knobs through). Holds a reference; the registry must outlive it. Each job's
// reading carries its phase, progress, knobs and announcements (starts_in_s, ends_in_s,
// checkpoint_in_iters, checkpoint_s) as of the read: aged by the registry since the report
// (age_announcements()), NaN once stale.

#include "agent/job_registry.hpp"
#include "runtime/job_channel.hpp"

namespace fw::agent {

class RegistryChannel : public JobChannel {
 public:
  explicit RegistryChannel(JobRegistry& r) : r_(r) {}
  uint64_t generation() const override { return r_.generation(); }
  std::vector<ChannelJob> jobs() const override;
  void set_knobs(const std::string& id, const KnobValues& k) override { r_.set_knobs(id, k); }
  void set_fill(const std::string& id, const std::map<int, double>& fill_w) override {
    r_.set_fill(id, fill_w);
  }

 private:
  JobRegistry& r_;
};

}  // namespace fw::agent
