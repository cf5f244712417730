#pragma once
// The etcd security keys of the coordinator's and the agent's configuration (the same keys in
// both: at the top level of coordinator.yaml, inside the agent's `fleet:` block):
//
//   etcd: [https://10.0.0.1:2379, https://10.0.0.2:2379]
//   etcd_tls:                        # with https:// endpoints
//     ca_file: /etc/flexwatt/etcd-ca.pem         # CA the members' certificates chain to
//                                                # (absent: the system's CAs)
//     cert_file: /etc/flexwatt/etcd-client.pem   # client certificate (etcd
//     key_file: /etc/flexwatt/etcd-client.key    # --client-cert-auth), both or neither
//   etcd_auth:                       # etcd's own auth (etcdctl auth enable)
//     user: flexwatt
//     password_file: /etc/flexwatt/etcd.password # the password on its first line; group
//                                                # and others no access (chmod 600)
//
// Errors name the file, line and field (core/config.hpp): a missing or unreadable file, a
// password file others can read, cert_file without key_file, TLS keys with http:// endpoints.
// Relative paths are taken from the working directory.

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/status.hpp"
#include "fleet/etcd_client.hpp"

namespace fw::fleet {

// Reads parent["etcd_tls"] and parent["etcd_auth"] (both optional) for the given endpoints.
Result<EtcdSecurity> parse_etcd_security(const ConfigNode& parent,
                                         const std::vector<std::string>& endpoints);

// The password on the first line of path (trailing "\r\n" removed). InvalidArgument when the
// file cannot be read, is not a regular file, has group/other access, or the line is empty.
Result<std::string> read_password_file(const std::string& path);

}  // namespace fw::fleet
