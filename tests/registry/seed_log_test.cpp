// The registry's per-seed log (registry/seed_log.hpp): entries written from several
// threads land under their own seed, updates accumulate, json() keys by the decimal seed.

#include "registry/seed_log.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace fw::registry {
namespace {

TEST(SeedLog, EntriesFromManyThreadsByDecimalSeed) {
  SeedLog log;
  EXPECT_EQ(log.json(), nlohmann::json::object());
  std::vector<std::thread> threads;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    threads.emplace_back([&log, seed] {
      for (int k = 0; k < 100; ++k) {
        log.update(seed, [](nlohmann::json& e) { e = e.is_null() ? 1 : e.get<int>() + 1; });
      }
    });
  }
  for (std::thread& t : threads) t.join();
  log.set(1000001, "greedy");
  log.set(1000001, "fixed");  // replaces
  const nlohmann::json j = log.json();
  ASSERT_EQ(j.size(), 9u);
  for (int seed = 1; seed <= 8; ++seed) EXPECT_EQ(j[std::to_string(seed)], 100) << seed;
  EXPECT_EQ(j["1000001"], "fixed");
}

}  // namespace
}  // namespace fw::registry
