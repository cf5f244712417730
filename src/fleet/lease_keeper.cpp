#include "fleet/lease_keeper.hpp"

#include <algorithm>
#include <chrono>

namespace fw::fleet {

std::unique_ptr<LeaseKeeper> LeaseKeeper::Start(EtcdClient* client, LeaseGrant lease,
                                                OnLost on_lost) {
  std::unique_ptr<LeaseKeeper> k(new LeaseKeeper(client, lease, std::move(on_lost)));
  k->thread_ = std::thread([p = k.get()] { p->run(); });
  return k;
}

LeaseKeeper::~LeaseKeeper() { stop(); }

void LeaseKeeper::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeaseKeeper::run() {
  using Clock = std::chrono::steady_clock;
  const auto ttl = std::chrono::milliseconds(lease_.ttl_s * 1000);
  const auto period = ttl / 3;
  auto last_ok = Clock::now();
  auto next = last_ok + period;
  Status last_error = Status::Unavailable("no answer");
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_until(lock, next, [&] { return stop_; })) return;
    }
    Status why;
    const auto sent = Clock::now();
    if (sent >= last_ok + ttl) {
      why =
          Status::Unavailable("lease " + std::to_string(lease_.id) +
                              " presumed expired: no renewal for its TTL: " + last_error.message());
    } else {
      // Never wait past the moment the lease must be presumed expired.
      const double left_s = std::chrono::duration<double>(last_ok + ttl - sent).count();
      auto r = client_->lease_keepalive(lease_.id, left_s);
      if (r.ok()) {
        renewals_.fetch_add(1);
        last_ok = sent;  // etcd restarted the TTL no earlier than the request was sent
        next = Clock::now() + std::chrono::milliseconds(r->ttl_s * 1000) / 3;
        continue;
      }
      if (r.status().code() != StatusCode::kNotFound) {
        last_error = r.status();  // etcd unreachable: retry soon, until the TTL is spent
        next = std::min(Clock::now() + std::chrono::milliseconds(200), last_ok + ttl);
        continue;
      }
      why = r.status();
    }
    lost_.store(true);
    if (on_lost_) on_lost_(why);
    return;
  }
}

}  // namespace fw::fleet
