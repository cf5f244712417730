#pragma once
// EtcdWatch: one watch stream (POST /v3/watch, chunked JSON lines) read by its own thread.
//
// Contract:
//  - Events are delivered in revision order, each revision once, on the watch thread
//    (callbacks must not block for long and must not call cancel()).
//  - When the stream breaks (member down, timeout, server error) the thread reconnects, on
//    the next member, with capped exponential backoff, from the revision after the last one
//    delivered; nothing is lost or repeated unless that revision has been compacted, which
//    ends the watch with on_error(NotFound "... compacted ...").
//  - The stream uses the client's TLS settings and auth token; a token etcd rejects is
//    replaced on the next stream, a permission refusal (or a wrong etcd password) ends the
//    watch with on_error(PermissionDenied).
//  - cancel() (and the destructor) stop the thread and return once it has ended.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.hpp"
#include "fleet/etcd_client.hpp"

namespace httplib {
class Client;
}

namespace fw::fleet {

struct WatchOptions {
  std::string key;
  std::string range_end;       // prefix_end(key) for a prefix watch; empty: the key only
  int64_t start_revision = 0;  // 0: from the revision current when the watch is created
  bool prev_kv = false;
  double idle_timeout_s = 30;  // reconnect after this long without a byte from the server
};

class EtcdWatch {
 public:
  // Events of one stream message (all share or follow one revision).
  using OnEvents = std::function<void(const std::vector<WatchEvent>& events)>;
  // The watch ended for good (compaction, rejected request). Not called on cancel().
  using OnError = std::function<void(const Status& status)>;

  // client must outlive the watch; it supplies endpoints, timeouts and backoff.
  static std::unique_ptr<EtcdWatch> Start(EtcdClient* client, WatchOptions options,
                                          OnEvents on_events, OnError on_error = {});
  ~EtcdWatch();
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  void cancel();
  // Waits until the server has confirmed the first stream (created) or timeout_s passes.
  bool wait_created(double timeout_s);
  // Revision the next event must have at least (resume point after a reconnect).
  int64_t next_revision() const { return next_rev_.load(); }
  int reconnects() const { return reconnects_.load(); }
  bool ended() const { return ended_.load(); }

 private:
  EtcdWatch(EtcdClient* client, WatchOptions options, OnEvents on_events, OnError on_error);
  void run();
  // One connection; returns a terminal status (non-ok) or ok to reconnect.
  Status stream_once(size_t endpoint);
  // Handles one JSON line; a non-ok status ends the stream (terminal if *terminal).
  Status handle_line(const std::string& line, bool* terminal);
  bool sleep_unless_cancelled(double seconds);

  EtcdClient* client_;
  WatchOptions options_;
  OnEvents on_events_;
  OnError on_error_;

  std::atomic<int64_t> next_rev_{0};
  std::atomic<int> reconnects_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> ended_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  bool created_ = false;
  httplib::Client* current_ = nullptr;  // guarded by mu_
  std::string token_;                   // the current stream's auth token (watch thread only)
  std::thread thread_;
};

}  // namespace fw::fleet
