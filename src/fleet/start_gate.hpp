#pragma once
// StartGate: the coordinator's staggered job starts (issue #48, power stabilisation). Jobs that
// announce a start (JobRecord::starts_at_unix_s, what their agents publish from the jobs'
// starts_in_s) are given start slots so that the site's power rises at most ramp_w_per_s on
// average over their starts: a job's slot is the later of its announced start and the time the
// start before it has risen at that rate (slot + rise_w / ramp_w_per_s). The assignments carry
// each node the latest slot of its announcing jobs (Assignment::start_at_unix_s); the agent
// relays it to the jobs, which start training then, not before. The coordinator's stop gate is
// the same rule on the ends jobs announce (JobRecord::ends_at_unix_s; rise_w: the power the
// job's stop removes, the site's fall): the jobs stop at their slots
// (Assignment::stop_at_unix_s), so the site falls at most ramp_w_per_s on average.
//
// Contract of plan(requests, now):
//  - a job keeps the slot it was given while it announces a start no later than that slot (or
//    than now, once the slot has passed: a job that is due announces now until it starts), so
//    a slot never moves under a job that waits on it; a job that announces a later start than
//    that is given a new one; a job that no longer announces (it
//    started, or left) is forgotten;
//  - new jobs queue after every kept slot, in order of announced start, then id: slot =
//    max(announced, now, free_at), free_at = slot + rise_w / ramp_w_per_s, starting from the
//    kept slots' latest free_at;
//  - ramp_w_per_s <= 0: no gate (every slot is the announced start).
// Deterministic; not thread-safe (the leader's round only).

#include <map>
#include <string>
#include <vector>

namespace fw::fleet {

struct StartRequest {
  std::string job;          // the job's id (records with one id are one job)
  double announced_unix_s;  // when it means to start
  double rise_w = 0;        // the site power its start adds (>= 0)
};

class StartGate {
 public:
  explicit StartGate(double ramp_w_per_s) : ramp_w_per_s_(ramp_w_per_s) {}
  // Each announcing job's slot (unix s), by job id.
  std::map<std::string, double> plan(const std::vector<StartRequest>& requests, double now_unix_s);
  double ramp_w_per_s() const { return ramp_w_per_s_; }

 private:
  struct Slot {
    double at_unix_s = 0, rise_w = 0;
  };
  double ramp_w_per_s_;
  std::map<std::string, Slot> slots_;
};

}  // namespace fw::fleet
