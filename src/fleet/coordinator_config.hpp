#pragma once
// coordinator.yaml: what `flexwatt coordinator --config` runs.
//
//   site: hall-a                     # required
//   id: coord-a                      # required, unique per member
//   etcd: [http://127.0.0.1:2379]    # required, members of one cluster (or https://)
//   etcd_tls: {ca_file: ..., cert_file: ..., key_file: ...}   # fleet/etcd_security_config.hpp
//   etcd_auth: {user: flexwatt, password_file: ...}
//   allocator: equal                 # equal | proportional | pfi | greedy
//   budget_w: 100000                 # default site budget when the budget key is unset
//   lease_ttl_s: 3                   # leadership lease (>= 2)
//   campaign_timeout_s: 1
//   expiry_s: 10                     # assignment lifetime
//   refresh_s: 2                     # rewrite period (<= expiry_s / 2)
//   listen: 127.0.0.1:8740           # grid HTTP endpoint ("" or absent: none)
//   grid_ramp_w_per_s: 0             # ramp for OpenADR-translated targets (0: steps;
//                                    # else 1..1e12 W/s)
//   token_file: /etc/flexwatt/coordinator.tokens  # bearer tokens, the agent's format
//                                    # ("SUBJECT SCOPE TOKEN", chmod 0600): writes need
//                                    # scope control, reads scope read
//   allow_unauthenticated_writes: false  # without token_file, writes are refused unless
//                                    # this is true and listen is a loopback address
//   audit_log: /var/log/flexwatt/coordinator-audit.log  # one JSON line per write
//                                    # (absent: stderr)
//   site_loop:                       # the closed site loop under grid targets (site_loop.hpp)
//     enabled: false
//     period_s: 1                    # rounds while an event binds
//     ki_per_s: 0.1                  # integral gain (site_loop.hpp)
//     z: 2                           # margin = z x measured noise
//   openadr:                         # OpenADR 3.1 VEN (openadr_ven.hpp; absent: none)
//     vtn_url: http://vtn.example:8080/openadr3/3.1.0   # required, http only
//     token_file: /etc/flexwatt/vtn.token  # bearer token (one line; absent: none sent)
//     program_id: dr-prog            # absent: every program's events
//     ven_name: flexwatt             # venName of the VEN, clientName of its subscription
//                                    # and reports
//     poll_s: 30                     # the leader polls the VTN's events this often
//     retry_min_s: 1                 # back-off after a failed VTN exchange, doubling to
//     retry_max_s: 300               # retry_max_s (0.1..3600 and retry_min_s..86400)
//     callback_listen: 127.0.0.1:0   # the subscription's notification listener (port 0:
//                                    # any free port; 0.0.0.0 or :: need callback_url)
//     callback_url: http://coord-a.example:8741/openadr/notify  # as the VTN reaches it
//                                    # (absent: http://<callback_listen>/openadr/notify)
//
// A non-loopback listen address needs token_file. expiry_s is at most 600 (agents refuse an
// assignment that expires further ahead).
//
// Errors name the file, line and field (core/config.hpp).

#include <string>
#include <vector>

#include "core/status.hpp"
#include "fleet/coordinator.hpp"
#include "fleet/etcd_client.hpp"
#include "fleet/openadr_link.hpp"
#include "fleet/openadr_ven.hpp"

namespace fw::fleet {

struct CoordinatorConfig {
  CoordinatorOptions options;
  std::vector<std::string> etcd;
  EtcdSecurity etcd_security;  // etcd_tls / etcd_auth
  std::string listen_host;     // empty: no grid endpoint
  int listen_port = 0;
  double grid_ramp_w_per_s = 0;
  std::string token_file;  // empty: none
  bool allow_unauthenticated_writes = false;
  std::string audit_log;  // empty: stderr
  bool openadr = false;   // the openadr block is present
  VenOptions ven;         // its options (ramp_w_per_s = grid_ramp_w_per_s)
  std::string ven_token_file;
  double ven_poll_s = 30;
  OpenAdrLinkOptions ven_link;  // poll_s = ven_poll_s, resource_name = site
};

Result<CoordinatorConfig> load_coordinator_config(const std::string& path);

}  // namespace fw::fleet
