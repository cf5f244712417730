#pragma once
// What one GatedServer (net/http_gate.hpp) lets any client hold: connections, time and workers.
// Plain data, without cpp-httplib, so that a server's public header can take it. The node
// agent's values are docs/agent-api.md "Limits", the grid endpoint's docs/fleet.md "Grid
// endpoint".

#include <cstddef>

namespace fw::net {

struct ConnectionLimits {
  double idle_timeout_s = 5;            // no request under way: closed after this, silently
  double head_timeout_s = 5;            // first byte of a head to its end: 408 and close after
  double body_timeout_s = 10;           // end of the head to the end of the body: 408 after
  double write_timeout_s = 5;           // one write waiting for the client to read
  int max_connections = 256;            // open connections on this server; 503 and close beyond
  int max_connections_per_client = 64;  // per peer IP (TCP) or peer uid (Unix socket)
  int threads = 32;                     // worker threads
  int worker_nice = 10;                 // nice value of the workers (0: unchanged)
  size_t keep_alive_max = 1000;         // requests per connection
  // Read and dropped before closing after a refusal; 0: 2 x max_body_bytes, at least 64 KiB.
  size_t drain_max_bytes = 0;
  // A request body larger than this is refused (413) before it is read: a Content-Length
  // over it unread, a chunked body after 2 x max_body_bytes + 1 KiB from the socket, or once
  // decoded.
  size_t max_body_bytes = 64 * 1024;
};

}  // namespace fw::net
