#pragma once
// coordinator.yaml: what `flexwatt coordinator --config` runs.
//
//   site: hall-a                     # required
//   id: coord-a                      # required, unique per member
//   etcd: [http://127.0.0.1:2379]    # required, members of one cluster
//   allocator: equal                 # equal | proportional | pfi | greedy
//   budget_w: 100000                 # default site budget when the budget key is unset
//   lease_ttl_s: 3                   # leadership lease (>= 2)
//   campaign_timeout_s: 1
//   expiry_s: 10                     # assignment lifetime
//   refresh_s: 2                     # rewrite period (<= expiry_s / 2)
//   listen: 127.0.0.1:8740           # grid HTTP endpoint ("" or absent: none)
//   grid_ramp_w_per_s: 0             # ramp for OpenADR-translated targets (0: steps)
//
// Errors name the file, line and field (core/config.hpp).

#include <string>
#include <vector>

#include "core/status.hpp"
#include "fleet/coordinator.hpp"

namespace fw::fleet {

struct CoordinatorConfig {
  CoordinatorOptions options;
  std::vector<std::string> etcd;
  std::string listen_host;  // empty: no grid endpoint
  int listen_port = 0;
  double grid_ramp_w_per_s = 0;
};

Result<CoordinatorConfig> load_coordinator_config(const std::string& path);

}  // namespace fw::fleet
