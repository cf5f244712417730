#pragma once
// Seeded random streams. No global RNG anywhere in flexwatt.
//
// One run seed fans out to independent named streams: Rng::stream(seed, "sim.noise").
// An Rng is a small value type (copying it copies its state), so a simulator clone
// continues every stream exactly where the original would have.
// Generator: xoshiro256** seeded through splitmix64. Not cryptographic.

#include <cmath>
#include <cstdint>
#include <string_view>

namespace fw {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  // Independent stream derived from a run seed and a stream name.
  static Rng stream(uint64_t seed, std::string_view name) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a of the name
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return Rng(seed ^ (h * 0x9E3779B97F4A7C15ull));
  }
  // Child stream number i of this one (e.g. one per GPU); does not advance *this.
  Rng child(uint64_t i) const { return Rng(s_[0] ^ s_[3] ^ ((i + 1) * 0xD1B54A32D192ED03ull)); }

  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& s : s_) s = splitmix64(x);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n); REQUIRES: n > 0.
  uint64_t below(uint64_t n) { return next_u64() % n; }
  // Standard normal (Box–Muller, one draw per call; no cached state).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  double normal(double mean, double sd) { return mean + sd * normal(); }
  // Log-normal with the given median and log-space sigma.
  double lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }
  double exponential(double mean) {
    double u = uniform();
    while (u <= 0.0) u = uniform();
    return -mean * std::log(u);
  }

  bool operator==(const Rng&) const = default;

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

}  // namespace fw
