#pragma once
// A fixed-capacity ring of recent snapshots: the history a controller observes.
//
// Contract: push() copies into a preallocated slot; once every slot has held a snapshot
// of the plant's shape (same GPU and job counts) no push allocates. Element age 0 is the
// newest. Not thread-safe.

#include <cstddef>
#include <vector>

#include "vocab/snapshot.hpp"

namespace fw {

class SnapshotRing {
 public:
  // REQUIRES: capacity >= 1.
  explicit SnapshotRing(size_t capacity) : slots_(capacity < 1 ? 1 : capacity) {}

  void push(const Snapshot& s) {
    head_ = (head_ + 1) % slots_.size();
    Snapshot& d = slots_[head_];
    d.time_s = s.time_s;
    d.gpus.assign(s.gpus.begin(), s.gpus.end());  // reuses capacity
    d.jobs.assign(s.jobs.begin(), s.jobs.end());
    if (size_ < slots_.size()) ++size_;
  }
  void clear() { size_ = 0; }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }
  bool empty() const { return size_ == 0; }
  // REQUIRES: age < size().
  const Snapshot& at_age(size_t age) const {
    // head_ − age, wrapped without a division (hot in feature building).
    return slots_[head_ >= age ? head_ - age : head_ + slots_.size() - age];
  }
  // REQUIRES: !empty().
  const Snapshot& newest() const { return at_age(0); }

 private:
  std::vector<Snapshot> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace fw
