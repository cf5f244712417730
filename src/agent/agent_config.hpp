#pragma once
// The node agent's configuration (agent.yaml; docs/agent.md "Configuration" lists every key).
// Errors name the file, line and field. Defaults suit a systemd deployment: the Unix socket,
// restore file and lock under /run/flexwatt.

#include <cstdint>
#include <string>
#include <vector>

#include "agent/server.hpp"
#include "control/safety_limiter.hpp"
#include "core/status.hpp"
#include "fleet/etcd_client.hpp"
#include "runtime/node_plant.hpp"
#include "vocab/snapshot.hpp"

namespace fw::agent {

// Optional `fleet:` block: the agent registers through fleet::NodeLink and takes its node
// budget from the coordinator's assignment (NodeLink::budget(), checked every tick; a change
// of more than 0.5 W replaces the budget as a PUT /v1/budget would). Unset (no etcd): off.
struct AgentFleetConfig {
  std::vector<std::string> etcd;  // member URLs; empty: no fleet
  std::string site;               // required with etcd
  std::string node;               // empty: the host name
  double safe_share_w = 0;        // node fallback share, W; required (> 0) with etcd
  double lease_ttl_s = 5;         // registration lease, 2 .. 60 s
  // fleet.etcd_tls / fleet.etcd_auth (fleet/etcd_security_config.hpp; docs/fleet.md)
  fleet::EtcdSecurity etcd_security;
  // Without server.token_file, a node that follows a coordinator refuses API writes (its
  // budget is the coordinator's) unless this is true; the API is then loopback or the Unix
  // socket only (a non-loopback TCP host needs a token file anyway).
  bool allow_unauthenticated_writes = false;
  // fleet.draw_curve: the node job's sweep per GPU, [[cap_w, draw_w], ...] (caps increasing,
  // 2..64 points), published as the node's draw curve (scaled by its GPUs) for the
  // coordinator's site loop; empty: the node publishes the curve it measures
  // (fleet_budget.hpp MeasuredDrawCurve).
  std::vector<std::pair<double, double>> draw_curve;
  bool enabled() const { return !etcd.empty(); }
};

// The default policy_dirs: the policies shipped with this binary (BIN/../share/flexwatt/policies,
// the `make dist` layout, and BIN/../policies, a build directory in the source tree; BIN is the
// running executable's directory) and /var/lib/flexwatt/policies.
std::vector<std::string> default_policy_dirs();

struct AgentConfig {
  NodePlantConfig plant;  // backend, nvml_library, gpus, seed, sim_overrides
  double period_s = 0.5;  // tick, 0.1 .. 1 s
  int loop_priority = 0;  // 1..99: the loop thread at SCHED_RR (needs CAP_SYS_NICE); 0: normal
  std::string controller = "pid";  // any registered controller spec
  // The only directories a file named in a controller spec (ppo:PATH, capnet:PATH; in
  // `controller` or over PUT /v1/controller) is read from (registry::ControllerEnv::
  // policy_dirs); absolute; empty: no file.
  std::vector<std::string> policy_dirs = default_policy_dirs();
  double budget_w = kUnset;        // node budget; NaN: the scenario's (sim) or none (hardware)
  double window_s = kUnset;        // budget judging window, s; NaN: the scenario's (sim) or 30
  double safe_cap_w = kUnset;      // static safe cap per GPU; NaN: budget / GPUs, in range
  double stale_after_s = kUnset;   // telemetry older than this → fallback; NaN: one period
  double job_silent_after_s = 60;  // a job silent this long → fallback; 0: never
  double duration_s = 0;           // 0: until SIGTERM/SIGINT
  bool read_only = false;          // measure and serve only: no cap or knob write, no save/restore
  std::string restore_file = "/run/flexwatt/saved-limits.json";
  std::string lock_file = "/run/flexwatt/agent.lock";
  std::string trace_dir;               // empty: no trace
  int64_t trace_rotate_ticks = 36000;  // ticks per trace segment
  int trace_keep = 5;                  // segments kept (older ones deleted)
  LimiterConfig limiter;
  ServerConfig server;  // unix_socket_path defaults to /run/flexwatt/agent.sock
  AgentFleetConfig fleet;
};

// Reads agent.yaml (JSON is accepted). Unknown keys and out-of-range values are errors.
Result<AgentConfig> load_agent_config(const std::string& path);
Result<AgentConfig> parse_agent_config(const std::string& text, const std::string& name);

}  // namespace fw::agent
