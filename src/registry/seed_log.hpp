#pragma once
// A prepared controller's per-seed log, for the row's notes: its episodes (one per seed, run on
// several threads) each write their seed's entry, and the entry's finish() reads the whole log
// once, as a JSON object keyed by the seed's decimal string (a seed
// never written is absent). Used by `lookahead` (plan_by_seed: the plan each seed ran) and `mpc`
// (plans_by_seed: each seed's replans). Thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace fw::registry {

class SeedLog {
 public:
  // Replaces the seed's entry with value.
  void set(uint64_t seed, nlohmann::json value) {
    std::lock_guard<std::mutex> lock(mu_);
    by_seed_[seed] = std::move(value);
  }
  // Calls f(entry) on the seed's entry (null when the seed has none yet) under the lock: f must
  // not call back into the log.
  template <class F>
  void update(uint64_t seed, F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    f(by_seed_[seed]);
  }
  // {"<seed>": entry, ...}; {} when nothing was written.
  nlohmann::json json() const {
    std::lock_guard<std::mutex> lock(mu_);
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [seed, entry] : by_seed_) j[std::to_string(seed)] = entry;
    return j;
  }

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, nlohmann::json> by_seed_;
};

}  // namespace fw::registry
