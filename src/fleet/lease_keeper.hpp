#pragma once
// LeaseKeeper: keeps one etcd lease alive from a background thread.
//
// Contract: renews every ttl/3 seconds. The lease is declared lost (lost() true, on_lost
// called once, thread ends) when etcd answers that it is dead (expired or revoked: a renewal
// without TTL) or when no renewal has succeeded for a full TTL (etcd unreachable: the lease
// must be presumed expired). stop() ends renewals without revoking; the destructor stops.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "fleet/etcd_client.hpp"

namespace fw::fleet {

class LeaseKeeper {
 public:
  using OnLost = std::function<void(const Status& why)>;
  // client must outlive the keeper. lease as granted (its ttl_s drives the period).
  static std::unique_ptr<LeaseKeeper> Start(EtcdClient* client, LeaseGrant lease,
                                            OnLost on_lost = {});
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  void stop();
  bool lost() const { return lost_.load(); }
  int64_t id() const { return lease_.id; }
  int renewals() const { return renewals_.load(); }

 private:
  LeaseKeeper(EtcdClient* client, LeaseGrant lease, OnLost on_lost)
      : client_(client), lease_(lease), on_lost_(std::move(on_lost)) {}
  void run();

  EtcdClient* client_;
  LeaseGrant lease_;
  OnLost on_lost_;
  std::atomic<bool> lost_{false};
  std::atomic<int> renewals_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace fw::fleet
