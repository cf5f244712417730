#include "fleet/etcd_client.hpp"

#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>

#include "fleet/base64.hpp"

namespace fw::fleet {
namespace {

std::chrono::microseconds to_us(double s) {
  return std::chrono::microseconds(static_cast<int64_t>(std::max(0.0, s) * 1e6));
}

// One HTTP exchange. etcd's gateway ends error answers with an HTTP trailer
// (Grpc-Trailer-Content-Type) that cpp-httplib 0.11 cannot parse: it reports a read error
// after the whole body has been received. So the body is collected as it arrives, and an
// answer counts as complete when its status line came and its body is a whole JSON value.
struct Answer {
  bool complete = false;
  int status = 0;
  std::string body;
  Json json;
  httplib::Error error = httplib::Error::Success;
};

Answer post(httplib::Client& cli, const std::string& path, const std::string& payload,
            const std::string& token) {
  Answer a;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = payload;
  req.set_header("Content-Type", "application/json");
  if (!token.empty()) req.set_header("Authorization", token);
  req.response_handler = [&](const httplib::Response& r) {
    a.status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    a.body.append(data, len);
    return true;
  };
  httplib::Response res;
  cli.send(req, res, a.error);
  if (a.status == 0) return a;
  a.json = Json::parse(a.body, nullptr, false);
  a.complete = !a.json.is_discarded();
  if (!a.complete && a.error == httplib::Error::Success) a.error = httplib::Error::Read;
  return a;
}

// Whether an error status means "another member (or a later try) may succeed".
bool retryable(const Status& s) { return s.code() == StatusCode::kUnavailable; }

}  // namespace

Result<EtcdEndpoint> parse_endpoint(std::string_view url) {
  std::string_view rest = url;
  bool tls = false;
  if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
    tls = true;
  } else if (rest.rfind("http://", 0) == 0) {
    rest.remove_prefix(7);
  } else if (rest.find("://") != std::string_view::npos) {
    return Status::InvalidArgument("etcd endpoint \"" + std::string(url) +
                                   "\": expected http:// or https://");
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == rest.size()) {
    return Status::InvalidArgument("etcd endpoint \"" + std::string(url) +
                                   "\": expected http://host:port or https://host:port");
  }
  int port = 0;
  const std::string_view p = rest.substr(colon + 1);
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (ec != std::errc() || ptr != p.data() + p.size() || port <= 0 || port > 65535) {
    return Status::InvalidArgument("etcd endpoint \"" + std::string(url) + "\": bad port");
  }
  return EtcdEndpoint{std::string(rest.substr(0, colon)), port, tls};
}

namespace {

// OpenSSL writes to its socket with write(2): a member that closed the connection would kill
// the process with SIGPIPE. Ignored unless the program installed a handler of its own.
void ignore_sigpipe() {
  struct sigaction old {};
  if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    ::signal(SIGPIPE, SIG_IGN);
  }
}

Status check_readable(const char* what, const std::string& path) {
  std::ifstream f(path);
  if (!f.good())
    return Status::NotFound("etcd " + std::string(what) + " " + path + ": cannot read");
  return Status::Ok();
}

}  // namespace

Result<EtcdClient> EtcdClient::Create(EtcdClientOptions options) {
  if (options.endpoints.empty()) return Status::InvalidArgument("etcd: no endpoints");
  if (options.max_attempts < 1) return Status::InvalidArgument("etcd: max_attempts must be >= 1");
  if (!(options.request_timeout_s > 0) || !(options.connect_timeout_s > 0) ||
      !(options.call_timeout_s > 0)) {
    return Status::InvalidArgument("etcd: timeouts must be > 0");
  }
  std::vector<EtcdEndpoint> eps;
  for (const auto& e : options.endpoints) {
    FW_ASSIGN_OR_RETURN(auto ep, parse_endpoint(e));
    if (!eps.empty() && ep.tls != eps.front().tls) {
      return Status::InvalidArgument("etcd endpoints mix http:// and https:// (" + e + ")");
    }
    eps.push_back(std::move(ep));
  }
  const EtcdSecurity& sec = options.security;
  if (sec.tls_files() && !eps.front().tls) {
    return Status::InvalidArgument("etcd: ca_file, cert_file and key_file need https:// endpoints");
  }
  if (sec.cert_file.empty() != sec.key_file.empty()) {
    return Status::InvalidArgument("etcd: cert_file and key_file go together");
  }
  if (!sec.ca_file.empty()) FW_RETURN_IF_ERROR(check_readable("ca_file", sec.ca_file));
  if (!sec.cert_file.empty()) {
    FW_RETURN_IF_ERROR(check_readable("cert_file", sec.cert_file));
    FW_RETURN_IF_ERROR(check_readable("key_file", sec.key_file));
    // OpenSSL loads the pair when the TLS client is made: a bad pair shows here.
    httplib::Client probe("https://" + eps.front().host + ":" + std::to_string(eps.front().port),
                          sec.cert_file, sec.key_file);
    if (!probe.is_valid()) {
      return Status::InvalidArgument("etcd: cert_file " + sec.cert_file + " and key_file " +
                                     sec.key_file + ": not a PEM certificate and its key");
    }
  }
  if (sec.user.empty() != sec.password.empty()) {
    return Status::InvalidArgument(sec.user.empty()
                                       ? "etcd: a password needs a user"
                                       : "etcd: user " + sec.user + " needs a password");
  }
  if (eps.front().tls) ignore_sigpipe();
  return EtcdClient(std::move(options), std::move(eps));
}

EtcdClient::EtcdClient(EtcdClientOptions options, std::vector<EtcdEndpoint> endpoints)
    : options_(std::move(options)),
      endpoints_(std::move(endpoints)),
      rng_(Rng::stream(options_.seed, "fleet.etcd.backoff")) {}

EtcdClient::EtcdClient(EtcdClient&& other) noexcept
    : options_(std::move(other.options_)),
      endpoints_(std::move(other.endpoints_)),
      preferred_(other.preferred_.load()),
      rng_(other.rng_),
      token_(std::move(other.token_)),
      authentications_(other.authentications_.load()) {
  std::lock_guard<std::mutex> lock(other.idle_mu_);
  idle_ = std::move(other.idle_);
}

EtcdClient::~EtcdClient() = default;

std::unique_ptr<httplib::Client> EtcdClient::take_connection(size_t idx) {
  {
    std::lock_guard<std::mutex> lock(idle_mu_);
    if (idle_.size() < endpoints_.size()) idle_.resize(endpoints_.size());
    auto& kept = idle_[idx];
    if (!kept.empty()) {
      std::unique_ptr<httplib::Client> cli = std::move(kept.back());
      kept.pop_back();
      return cli;
    }
  }
  return http_client(endpoints_[idx]);
}

void EtcdClient::keep_connection(size_t idx, std::unique_ptr<httplib::Client> cli) {
  std::lock_guard<std::mutex> lock(idle_mu_);
  if (idle_.size() < endpoints_.size()) idle_.resize(endpoints_.size());
  if (idle_[idx].size() < kIdleConnections) idle_[idx].push_back(std::move(cli));
}

std::unique_ptr<httplib::Client> EtcdClient::http_client(const EtcdEndpoint& ep) const {
  std::unique_ptr<httplib::Client> cli;
  if (!ep.tls) {
    cli = std::make_unique<httplib::Client>(ep.host, ep.port);
  } else {
    const EtcdSecurity& sec = options_.security;
    cli = std::make_unique<httplib::Client>("https://" + ep.host + ":" + std::to_string(ep.port),
                                            sec.cert_file, sec.key_file);
    if (!sec.ca_file.empty()) cli->set_ca_cert_path(sec.ca_file);
    cli->enable_server_certificate_verification(true);
  }
  // A request is written in pieces (head, body): on a kept connection Nagle's algorithm holds
  // the body until the head's delayed ACK, about 40 ms per piece.
  cli->set_tcp_nodelay(true);
  return cli;
}

bool EtcdClient::token_rejected(std::string_view message) {
  return message.find("invalid auth token") != std::string_view::npos ||
         message.find("revision of auth store is old") != std::string_view::npos;
}

Result<std::string> EtcdClient::auth_token() {
  const EtcdSecurity& sec = options_.security;
  if (sec.user.empty()) return std::string();
  {
    std::lock_guard<std::mutex> lock(token_mu_);
    if (!token_.empty()) return token_;
  }
  auto j = call_impl("/v3/auth/authenticate", Json{{"name", sec.user}, {"password", sec.password}},
                     Retry::kIdempotent, std::max(options_.call_timeout_s, options_.auth_timeout_s),
                     /*with_token=*/false);
  if (!j.ok()) {
    return Status(j.status().code(), "etcd auth as user " + sec.user + ": " + j.status().message());
  }
  auto t = j->find("token");
  if (t == j->end() || !t->is_string() || t->get<std::string>().empty()) {
    return Status::Internal("etcd auth as user " + sec.user + ": no token in the answer");
  }
  authentications_.fetch_add(1);
  std::lock_guard<std::mutex> lock(token_mu_);
  token_ = t->get<std::string>();
  return token_;
}

void EtcdClient::drop_token(const std::string& token) {
  std::lock_guard<std::mutex> lock(token_mu_);
  if (token_ == token) token_.clear();
}

double EtcdClient::backoff_s(int attempt) {
  const double base = std::min(options_.backoff_max_s,
                               options_.backoff_initial_s * std::ldexp(1.0, std::min(attempt, 30)));
  double u;
  {
    std::lock_guard<std::mutex> lock(rng_mu_);
    u = static_cast<double>(rng_.next_u64() >> 11) * 0x1.0p-53;
  }
  return base * (0.5 + 0.5 * u);
}

Result<Json> EtcdClient::call(const std::string& path, const Json& body, Retry retry,
                              double timeout_s) {
  return call_impl(path, body, retry, timeout_s, /*with_token=*/true);
}

Result<Json> EtcdClient::call_impl(const std::string& path, const Json& body, Retry retry,
                                   double timeout_s, bool with_token) {
  using Clock = std::chrono::steady_clock;
  const std::string payload = body.dump();
  const double total_s = timeout_s > 0 ? timeout_s : options_.call_timeout_s;
  const auto deadline = Clock::now() + to_us(total_s);
  auto remaining_s = [&] { return std::chrono::duration<double>(deadline - Clock::now()).count(); };
  Status last =
      Status::Unavailable("etcd " + path + ": no attempt within " + std::to_string(total_s) + " s");
  const size_t start = preferred_.load();
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    if (attempt > 0) {
      const double pause = backoff_s(attempt - 1);
      if (pause >= remaining_s()) break;
      std::this_thread::sleep_for(to_us(pause));
    }
    const double left = remaining_s();
    if (left <= 0) break;
    // A blocking call waits its whole timeout for an answer; others one request timeout.
    const double read_timeout = timeout_s > 0 ? left : std::min(options_.request_timeout_s, left);
    const size_t idx = (start + static_cast<size_t>(attempt)) % endpoints_.size();
    const EtcdEndpoint& ep = endpoints_[idx];
    std::string token;
    if (with_token) {
      auto t = auth_token();
      if (!t.ok()) {
        last = t.status();
        if (last.code() == StatusCode::kUnavailable) continue;
        return last;
      }
      token = std::move(t).value();
    }
    std::unique_ptr<httplib::Client> cli = take_connection(idx);
    cli->set_connection_timeout(to_us(std::min(options_.connect_timeout_s, left)));
    cli->set_read_timeout(to_us(read_timeout));
    cli->set_write_timeout(to_us(options_.request_timeout_s));
    cli->set_keep_alive(true);
    const Answer res = post(*cli, path, payload, token);
    if (res.complete) keep_connection(idx, std::move(cli));  // else it closes here
    if (!res.complete) {
      last = Status::Unavailable("etcd " + std::string(ep.tls ? "https://" : "") + ep.str() + path +
                                 ": " + httplib::to_string(res.error));
      // A TLS handshake that failed sent no request either.
      const bool not_sent = res.error == httplib::Error::Connection ||
                            res.error == httplib::Error::ConnectionTimeout ||
                            res.error == httplib::Error::SSLConnection ||
                            res.error == httplib::Error::SSLLoadingCerts ||
                            res.error == httplib::Error::SSLServerVerification;
      // A request with a token that got no answer in time: etcd 3.4 answers a simple token
      // naming an index above its own (a rebuilt or restored store) only after waiting for
      // that index, seconds later; the next attempt (and call) authenticates again.
      if (!token.empty() && res.error == httplib::Error::Read) drop_token(token);
      if (not_sent || retry == Retry::kIdempotent) continue;
      return last;
    }
    if (res.status / 100 == 2) {
      // A streaming endpoint answered in one piece carries its error inside.
      if (auto e = res.json.find("error"); e != res.json.end() && e->is_object()) {
        last = status_from_error(res.status, e->dump());
      } else {
        preferred_.store(idx);
        return res.json;
      }
    } else {
      last = status_from_error(res.status, res.body);
    }
    // A stale token: etcd refused the request before applying it, so any request may be sent
    // again with a new one.
    if (!token.empty() && token_rejected(last.message())) {
      drop_token(token);
      continue;
    }
    if (!retryable(last) || retry == Retry::kConnectOnly) return last;
  }
  return last;
}

Result<RangeResponse> EtcdClient::range(const RangeRequest& request) {
  FW_ASSIGN_OR_RETURN(Json j, call("/v3/kv/range", encode_range(request), Retry::kIdempotent));
  return decode_range(j);
}

Result<RangeResponse> EtcdClient::get(std::string_view key) {
  RangeRequest r;
  r.key = std::string(key);
  return range(r);
}

Result<RangeResponse> EtcdClient::get_prefix(std::string_view prefix) {
  RangeRequest r;
  r.key = prefix.empty() ? std::string(1, '\0') : std::string(prefix);
  r.range_end = prefix_end(prefix);
  return range(r);
}

Result<PutResponse> EtcdClient::put(std::string_view key, std::string_view value, int64_t lease,
                                    bool prev_kv) {
  FW_ASSIGN_OR_RETURN(
      Json j, call("/v3/kv/put", encode_put(key, value, lease, prev_kv), Retry::kIdempotent));
  return decode_put(j);
}

Result<DeleteResponse> EtcdClient::erase(std::string_view key, std::string_view range_end,
                                         bool prev_kv) {
  FW_ASSIGN_OR_RETURN(Json j, call("/v3/kv/deleterange", encode_delete(key, range_end, prev_kv),
                                   Retry::kIdempotent));
  return decode_delete(j);
}

Result<TxnResponse> EtcdClient::txn(const std::vector<Compare>& compare,
                                    const std::vector<TxnOp>& success,
                                    const std::vector<TxnOp>& failure) {
  FW_ASSIGN_OR_RETURN(
      Json j, call("/v3/kv/txn", encode_txn(compare, success, failure), Retry::kConnectOnly));
  return decode_txn(j);
}

Result<LeaseGrant> EtcdClient::lease_grant(int64_t ttl_s) {
  if (ttl_s <= 0) return Status::InvalidArgument("lease_grant: ttl_s must be > 0");
  // Retrying a grant after a lost answer may leave an orphan lease; it expires by itself.
  FW_ASSIGN_OR_RETURN(
      Json j, call("/v3/lease/grant", Json{{"TTL", std::to_string(ttl_s)}}, Retry::kIdempotent));
  return decode_lease_grant(j);
}

Result<LeaseGrant> EtcdClient::lease_keepalive(int64_t id, double timeout_s) {
  FW_ASSIGN_OR_RETURN(
      Json j, call("/v3/lease/keepalive", Json{{"ID", std::to_string(id)}}, Retry::kIdempotent));
  return decode_keepalive(j);
}

Status EtcdClient::lease_revoke(int64_t id) {
  auto j = call("/v3/lease/revoke", Json{{"ID", std::to_string(id)}}, Retry::kIdempotent);
  return j.status();
}

Result<LeaderKey> EtcdClient::campaign(std::string_view name, int64_t lease, std::string_view value,
                                       double timeout_s) {
  Json body = {{"name", base64_encode(name)},
               {"lease", std::to_string(lease)},
               {"value", base64_encode(value)}};
  auto j = call("/v3/election/campaign", body, Retry::kConnectOnly, timeout_s);
  if (!j.ok()) {
    // Withdraw: a campaign key left behind would win later for a caller that gave up.
    // etcd names it <name>/<lease id in hex>.
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(lease));
    (void)erase(std::string(name) + "/" + hex);
    return j.status();
  }
  return decode_leader_key(*j);
}

Status EtcdClient::proclaim(const LeaderKey& leader, std::string_view value) {
  Json body = {{"leader", encode_leader(leader)}, {"value", base64_encode(value)}};
  return call("/v3/election/proclaim", body, Retry::kIdempotent).status();
}

Result<KeyValue> EtcdClient::leader(std::string_view name) {
  FW_ASSIGN_OR_RETURN(
      Json j, call("/v3/election/leader", Json{{"name", base64_encode(name)}}, Retry::kIdempotent));
  if (!j.contains("kv")) return Status::NotFound("election " + std::string(name) + ": no leader");
  auto kv = decode_kv(j["kv"]);
  if (!kv.ok()) return kv.status().with_context("election leader");
  return kv;
}

Status EtcdClient::resign(const LeaderKey& leader) {
  return call("/v3/election/resign", Json{{"leader", encode_leader(leader)}}, Retry::kIdempotent)
      .status();
}

}  // namespace fw::fleet
