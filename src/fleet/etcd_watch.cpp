#include "fleet/etcd_watch.hpp"

#include <httplib.h>

#include <chrono>

namespace fw::fleet {

std::unique_ptr<EtcdWatch> EtcdWatch::Start(EtcdClient* client, WatchOptions options,
                                            OnEvents on_events, OnError on_error) {
  std::unique_ptr<EtcdWatch> w(
      new EtcdWatch(client, std::move(options), std::move(on_events), std::move(on_error)));
  w->thread_ = std::thread([p = w.get()] { p->run(); });
  return w;
}

EtcdWatch::EtcdWatch(EtcdClient* client, WatchOptions options, OnEvents on_events, OnError on_error)
    : client_(client),
      options_(std::move(options)),
      on_events_(std::move(on_events)),
      on_error_(std::move(on_error)) {
  next_rev_.store(options_.start_revision);
}

EtcdWatch::~EtcdWatch() { cancel(); }

void EtcdWatch::cancel() {
  stop_.store(true);
  cv_.notify_all();
  // stop() on a client that has not opened its socket yet does nothing, so repeat it until
  // the thread has left the request.
  while (!ended_.load()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (current_ != nullptr) current_->stop();
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return ended_.load(); });
  }
  if (thread_.joinable()) thread_.join();
}

bool EtcdWatch::wait_created(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6)), [&] {
    return created_ || ended_.load();
  }) && created_;
}

bool EtcdWatch::sleep_unless_cancelled(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)),
                       [&] { return stop_.load(); });
}

void EtcdWatch::run() {
  size_t endpoint = client_->preferred_endpoint();
  int failures = 0;
  while (!stop_.load()) {
    const int64_t before = next_rev_.load();
    Status s = stream_once(endpoint);
    if (stop_.load()) break;
    if (!s.ok()) {
      if (on_error_) on_error_(s);
      break;
    }
    // Stream broke: try the next member, backing off while nothing gets through.
    reconnects_.fetch_add(1);
    failures = next_rev_.load() > before ? 0 : failures + 1;
    endpoint = (endpoint + 1) % client_->endpoints().size();
    if (!sleep_unless_cancelled(client_->backoff_s(failures))) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended_.store(true);
  }
  cv_.notify_all();
}

Status EtcdWatch::stream_once(size_t endpoint) {
  const EtcdEndpoint& ep = client_->endpoints()[endpoint];
  // etcd auth: a wrong user/password ends the watch; etcd not answering is a broken stream.
  auto token = client_->auth_token();
  if (!token.ok()) {
    return token.status().code() == StatusCode::kUnavailable ? Status::Ok() : token.status();
  }
  token_ = *token;
  const auto owned = client_->http_client(ep);
  httplib::Client& cli = *owned;
  const auto& o = client_->options();
  cli.set_connection_timeout(
      std::chrono::microseconds(static_cast<int64_t>(o.connect_timeout_s * 1e6)));
  cli.set_read_timeout(
      std::chrono::microseconds(static_cast<int64_t>(options_.idle_timeout_s * 1e6)));
  cli.set_write_timeout(std::chrono::microseconds(static_cast<int64_t>(o.request_timeout_s * 1e6)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_.load()) return Status::Ok();
    current_ = &cli;
  }
  httplib::Request req;
  req.method = "POST";
  req.path = "/v3/watch";
  req.set_header("Content-Type", "application/json");
  // gRPC metadata "hasleader": a member that loses its raft leader cancels the stream
  // ("no leader") instead of staying silent, so the watch moves to a member with quorum.
  req.set_header("Grpc-Metadata-hasleader", "true");
  if (!token_.empty()) req.set_header("Authorization", token_);
  req.body =
      encode_watch_create(options_.key, options_.range_end, next_rev_.load(), options_.prev_kv)
          .dump();
  LineSplitter lines;
  Status terminal_status;
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    lines.feed(std::string_view(data, len));
    std::string line;
    while (lines.next(&line)) {
      bool terminal = false;
      Status s = handle_line(line, &terminal);
      if (!s.ok()) {
        if (terminal) terminal_status = s;
        return false;
      }
    }
    return !stop_.load();
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  cli.send(req, res, err);
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = nullptr;
  }
  return terminal_status;
}

Status EtcdWatch::handle_line(const std::string& line, bool* terminal) {
  auto r = decode_watch_line(line);
  if (!r.ok()) {
    // A malformed line or a server error ends this stream; bad requests end the watch.
    *terminal = r.status().code() == StatusCode::kInvalidArgument &&
                line.find("\"error\"") != std::string::npos;
    return r.status();
  }
  const WatchResponse& w = *r;
  if (w.compact_revision > 0) {
    *terminal = true;
    return Status::NotFound("etcd watch " + options_.key + ": revision " +
                            std::to_string(next_rev_.load()) + " compacted (oldest " +
                            std::to_string(w.compact_revision) + ")");
  }
  if (w.canceled) {
    // etcd auth: a stale token is replaced on the next stream; a refusal ends the watch.
    if (EtcdClient::token_rejected(w.cancel_reason)) {
      client_->drop_token(token_);
    } else if (w.cancel_reason.find("permission denied") != std::string::npos ||
               w.cancel_reason.find("user name is empty") != std::string::npos) {
      *terminal = true;
      return Status::PermissionDenied("etcd watch " + options_.key + ": " + w.cancel_reason);
    }
    return Status::Unavailable("etcd watch canceled by server: " + w.cancel_reason);
  }
  if (w.created) {
    if (next_rev_.load() == 0) next_rev_.store(w.revision + 1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      created_ = true;
    }
    cv_.notify_all();
  }
  if (!w.events.empty()) {
    // After a reconnect the server never resends revisions below start_revision; this guards
    // against a member answering from an older state all the same.
    std::vector<WatchEvent> fresh;
    for (const auto& e : w.events) {
      if (e.kv.mod_revision >= next_rev_.load()) fresh.push_back(e);
    }
    if (!fresh.empty()) {
      next_rev_.store(fresh.back().kv.mod_revision + 1);
      if (on_events_) on_events_(fresh);
    }
  }
  return Status::Ok();
}

}  // namespace fw::fleet
