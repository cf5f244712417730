#pragma once
// EtcdClient: etcd v3 over its JSON gateway (HTTP/1.1, "/v3/..."), with cpp-httplib.
//
// Contract:
//  - Never throws; every call returns Status / Result<T>. Thread-safe: a call holds a
//    connection of its own while it runs (calls from several threads do not serialise) and
//    gives it back for the next call when the member answered (HTTP keep-alive; at most
//    kIdleConnections kept per member); a connection whose request failed is closed. A kept
//    connection the member has closed meanwhile is replaced before the request is sent.
//  - Endpoints: "http://host:port", "host:port" or "https://host:port" (all of one scheme),
//    members of one cluster. A call starts on
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
//  - Security (EtcdSecurity): https endpoints verify each member's certificate (chain to
//    ca_file, or the system's CAs when it is empty, and the endpoint's host name or IP in the
//    certificate) and may present a client certificate (etcd --client-cert-auth). With a
//    user, every request carries an etcd auth token (header Authorization) from
//    /v3/auth/authenticate; a token etcd reports invalid (expired after its --auth-token-ttl,
//    lost by a member restart, an auth store changed) is replaced and the request sent again,
//    whatever its retry class: etcd refused it before applying it. The password is never put
//    in a message. Create() with https endpoints sets SIGPIPE to ignored when it has its
//    default action (OpenSSL writes with write(2); a closed connection must be an error).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "core/status.hpp"
#include "fleet/etcd_json.hpp"
#include "fleet/etcd_types.hpp"

namespace httplib {
class Client;
}

namespace fw::fleet {

struct EtcdEndpoint {
  std::string host;
  int port = 0;
  bool tls = false;  // https://
  std::string str() const { return host + ":" + std::to_string(port); }
};

// "http://127.0.0.1:2379", "127.0.0.1:2379" (plain) or "https://127.0.0.1:2379" (TLS).
Result<EtcdEndpoint> parse_endpoint(std::string_view url);

// How the client proves itself to etcd and checks the members (docs/fleet.md "Security").
struct EtcdSecurity {
  std::string ca_file;    // PEM CA bundle the members' certificates must chain to ("": system)
  std::string cert_file;  // PEM client certificate, with key_file (both or neither)
  std::string key_file;   // PEM private key of cert_file
  std::string user;       // etcd auth user ("": no etcd auth)
  std::string password;   // that user's password (required with user)
  bool tls_files() const { return !ca_file.empty() || !cert_file.empty() || !key_file.empty(); }
};

struct EtcdClientOptions {
  std::vector<std::string> endpoints;  // at least one
  double connect_timeout_s = 1.0;
  double request_timeout_s = 3.0;  // read/write timeout of one attempt
  double call_timeout_s = 10.0;    // bound on one call, all attempts and pauses included
  int max_attempts = 5;            // per call, across endpoints
  double backoff_initial_s = 0.05;
  double backoff_max_s = 1.0;
  uint64_t seed = 1;  // jitter stream
  EtcdSecurity security;
  // Bound on getting an auth token (etcd checks the password with bcrypt: slow on a loaded
  // member). Not capped by call_timeout_s: a token is got once and then reused.
  double auth_timeout_s = 5.0;
};

class EtcdClient {
 public:
  // Fails on an empty or malformed endpoint list, endpoints mixing http and https, TLS files
  // with plain endpoints, cert_file without key_file (or the reverse), an unreadable file or
  // a client certificate/key OpenSSL cannot load, and a user without a password.
  static Result<EtcdClient> Create(EtcdClientOptions options);

  EtcdClient(EtcdClient&& other) noexcept;
  ~EtcdClient();  // closes the kept connections
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

  // A client for one member, configured with the TLS settings (connection timeouts are the
  // caller's). Never null.
  std::unique_ptr<httplib::Client> http_client(const EtcdEndpoint& ep) const;
  // The auth token to send ("" without a user), authenticating when none is held.
  // PermissionDenied: etcd refused the user/password; Unavailable: etcd did not answer.
  Result<std::string> auth_token();
  // Forgets token if it is still the one held (etcd said it is invalid).
  void drop_token(const std::string& token);
  // Whether an etcd error message says the token is no longer valid (get a new one).
  static bool token_rejected(std::string_view message);
  uint64_t authentications() const { return authentications_.load(); }

  // Connections kept open per member between calls (HTTP keep-alive).
  static constexpr size_t kIdleConnections = 4;

  enum class Retry { kIdempotent, kConnectOnly };
  // POST body to path; the decoded JSON answer of a 2xx reply, else the error. timeout_s > 0
  // bounds the call instead of call_timeout_s and is also the wait for a blocking answer.
  Result<Json> call(const std::string& path, const Json& body, Retry retry, double timeout_s = 0);

 private:
  EtcdClient(EtcdClientOptions options, std::vector<EtcdEndpoint> endpoints);
  Result<Json> call_impl(const std::string& path, const Json& body, Retry retry, double timeout_s,
                         bool with_token);

  EtcdClientOptions options_;
  std::vector<EtcdEndpoint> endpoints_;
  std::atomic<size_t> preferred_{0};
  std::mutex rng_mu_;
  Rng rng_;
  std::mutex token_mu_;
  std::string token_;  // guarded by token_mu_
  std::atomic<uint64_t> authentications_{0};
  // A connection to member idx: a kept one, else a new one; give it back when it answered.
  std::unique_ptr<httplib::Client> take_connection(size_t idx);
  void keep_connection(size_t idx, std::unique_ptr<httplib::Client> cli);
  std::mutex idle_mu_;
  std::vector<std::vector<std::unique_ptr<httplib::Client>>> idle_;  // per member, by idle_mu_
};

}  // namespace fw::fleet
