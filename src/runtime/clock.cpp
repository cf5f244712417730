#include "runtime/clock.hpp"

#include <thread>

namespace fw {

double SteadyClock::now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void SteadyClock::sleep_until_s(double t_s) {
  std::this_thread::sleep_until(t0_ +
                                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(t_s)));
}

}  // namespace fw
