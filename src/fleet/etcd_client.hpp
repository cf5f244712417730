#pragma once
// EtcdClient: etcd v3 over its JSON gateway (HTTP/1.1, "/v3/..."), with cpp-httplib.
//
// Contract:
//  - Never throws; every call returns Status / Result<T>. Thread-safe (each call opens its
//    own connection, so calls from several threads do not serialise).
//  - Endpoints: "http://host:port" or "host:port", members of one cluster. A call starts on
//    the member that last answered and fails over to the next on a transport error or an
//    "unavailable" answer (no leader, leader changed, timeout).
//  - Retries: at most max_attempts per call, sleeping a capped exponential backoff with
//    jitter (seeded: the sequence of delays is a function of the seed) between attempts.
//    A request that may have reached the server (read error, timeout) is retried only if
//    it is idempotent (range, put, delete, lease keepalive/revoke, leader, resign); txn and
//    campaign are retried only when the connection could not be made at all.
//  - Timeouts: connect_timeout_s and request_timeout_s per attempt; call_timeout_s bounds a
//    whole call (attempts and pauses). Calls taking a timeout_s use it as that bound, and
//    a blocking call (campaign) waits that long for its answer.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "core/status.hpp"
#include "fleet/etcd_json.hpp"
#include "fleet/etcd_types.hpp"

namespace fw::fleet {

struct EtcdEndpoint {
  std::string host;
  int port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
};

// "http://127.0.0.1:2379" or "127.0.0.1:2379" -> endpoint; https is not supported.
Result<EtcdEndpoint> parse_endpoint(std::string_view url);

struct EtcdClientOptions {
  std::vector<std::string> endpoints;  // at least one
  double connect_timeout_s = 1.0;
  double request_timeout_s = 3.0;  // read/write timeout of one attempt
  double call_timeout_s = 10.0;    // bound on one call, all attempts and pauses included
  int max_attempts = 5;            // per call, across endpoints
  double backoff_initial_s = 0.05;
  double backoff_max_s = 1.0;
  uint64_t seed = 1;  // jitter stream
};

class EtcdClient {
 public:
  // Fails on an empty or malformed endpoint list.
  static Result<EtcdClient> Create(EtcdClientOptions options);

  EtcdClient(EtcdClient&& other) noexcept;
  EtcdClient& operator=(EtcdClient&&) = delete;

  // ---- KV ----
  Result<RangeResponse> range(const RangeRequest& request);
  Result<RangeResponse> get(std::string_view key);  // the single key (kvs empty if absent)
  Result<RangeResponse> get_prefix(std::string_view prefix);
  Result<PutResponse> put(std::string_view key, std::string_view value, int64_t lease = 0,
                          bool prev_kv = false);
  Result<DeleteResponse> erase(std::string_view key, std::string_view range_end = {},
                               bool prev_kv = false);
  Result<TxnResponse> txn(const std::vector<Compare>& compare, const std::vector<TxnOp>& success,
                          const std::vector<TxnOp>& failure = {});

  // ---- leases ----
  // TTL is raised by etcd to its minimum (~2 s with default election timeout).
  Result<LeaseGrant> lease_grant(int64_t ttl_s);
  // One renewal. NotFound when the lease is dead (expired or revoked): its keys are gone.
  Result<LeaseGrant> lease_keepalive(int64_t id, double timeout_s = 0);
  Status lease_revoke(int64_t id);  // NotFound if already gone

  // ---- election (v3election) ----
  // Blocks until this lease leads name, or timeout_s passes (Unavailable, campaign withdrawn).
  Result<LeaderKey> campaign(std::string_view name, int64_t lease, std::string_view value,
                             double timeout_s);
  Status proclaim(const LeaderKey& leader, std::string_view value);  // NotFound: not leader
  Result<KeyValue> leader(std::string_view name);                    // NotFound: no leader
  Status resign(const LeaderKey& leader);

  // ---- plumbing, shared with EtcdWatch ----
  const EtcdClientOptions& options() const { return options_; }
  const std::vector<EtcdEndpoint>& endpoints() const { return endpoints_; }
  size_t preferred_endpoint() const { return preferred_.load(); }
  void set_preferred_endpoint(size_t i) { preferred_.store(i % endpoints_.size()); }
  // Delay before retry number attempt (0-based): min(max, initial * 2^attempt) scaled by a
  // jitter factor in [0.5, 1).
  double backoff_s(int attempt);

  enum class Retry { kIdempotent, kConnectOnly };
  // POST body to path; the decoded JSON answer of a 2xx reply, else the error. timeout_s > 0
  // bounds the call instead of call_timeout_s and is also the wait for a blocking answer.
  Result<Json> call(const std::string& path, const Json& body, Retry retry, double timeout_s = 0);

 private:
  EtcdClient(EtcdClientOptions options, std::vector<EtcdEndpoint> endpoints);

  EtcdClientOptions options_;
  std::vector<EtcdEndpoint> endpoints_;
  std::atomic<size_t> preferred_{0};
  std::mutex rng_mu_;
  Rng rng_;
};

}  // namespace fw::fleet
