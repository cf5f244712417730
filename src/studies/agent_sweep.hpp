#pragma once
// `flexwatt sweep --agent ADDR`: a power-cap sweep of one job on a live node, through the node
// agent's HTTP API (docs/agent-api.md), where the operator allows cap writes (an admin token;
// the agent not read_only).
//
// For each cap (ascending, the last one the devices' maximum = the uncapped point):
//   1. PUT /v1/controller {"controller": "static:knob=caps,value=CAP"} (every GPU at CAP,
//      through the agent's SafetyLimiter and cap validation);
//   2. waits dwell_s, then checks the controller is in force;
//   3. polls GET /v1/status every poll_s and measures over whole steps of the job: from the
//      first state at which its steps_total (tokens_total for a job reporting no steps) has
//      moved to the first state at which it moves again after measure_s (so at least one step,
//      even when a step is longer than measure_s): the node power (the GPUs' energy counters'
//      difference; the mean of the polled node_power_w where a GPU has no counter) and the
//      job's throughput (tokens_total difference, tokens/s), both over that span on the plant's
//      clock (loop.plant_time_s: simulated seconds on sim). A job whose counter does not move
//      for step_timeout_s fails the sweep (Unavailable).
// Then the previous controller is put back (also after a failure), the P/Pmax, T/Tmax and PFI
// are computed by sweep_result, and (publish_pfi) the PFI is recorded on the agent
// (PUT /v1/jobs/{id}/pfi, source "sweep") so /v1/status reports it.
// Times are wall seconds. Not thread-safe; blocks for about caps × (dwell_s + measure_s + two
// steps of the job).

#include <functional>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "studies/sweep.hpp"

namespace fw::studies {

struct AgentSweepRequest {
  std::string address;          // "http://HOST:PORT", or a Unix socket path ("unix:PATH" or "/…")
  std::string token;            // bearer token with the admin scope; empty: none (auth off)
  std::string job_id;           // a registered job; empty: the only registered job
  std::vector<double> caps_w;   // per-GPU caps; empty: 6 from the devices' minimum to maximum
  double dwell_s = 30;          // settling time after each cap change
  double measure_s = 60;        // measured span per cap
  double poll_s = 0.1;          // status polling period while measuring
  double step_timeout_s = 900;  // longest wait for the job's progress counter to move
  bool publish_pfi = true;      // record the PFI on the agent when done
  // Points that give no PFI (no cap lowered the throughput) fail the sweep; false: they are
  // returned with pfi NaN (a caller that only needs the caps applied and measured: the
  // pipeline profile's probes). publish_pfi needs a PFI.
  bool require_pfi = true;
};

// InvalidArgument for a bad request (no job, caps outside the devices' range: exit 2);
// PermissionDenied when the agent is read_only or refuses the token (401/403); Unavailable for
// every other failure at run time (exit 1): the agent unreachable or refusing a call, the job
// gone or stalled, or points that give no PFI (no cap lowered the throughput; unless
// !require_pfi). `log` (may be
// empty) gets one line per step.
Result<SweepResult> sweep_through_agent(const AgentSweepRequest& req,
                                        const std::function<void(const std::string&)>& log = {});

}  // namespace fw::studies
