#include "runtime/stop_signals.hpp"

#include <atomic>

namespace fw {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
extern "C" void fw_on_stop_signal(int sig) {
  g_signal.store(sig);
  g_stop.store(true);
}

}  // namespace

StopSignals::StopSignals() {
  g_stop.store(false);
  g_signal.store(0);
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    old_[i] = std::signal(kSignals[i], fw_on_stop_signal);
  }
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    std::signal(kSignals[i], old_[i]);
  }
}

bool StopSignals::requested() { return g_stop.load(); }
int StopSignals::signal_number() { return g_signal.load(); }
void StopSignals::request() { g_stop.store(true); }

}  // namespace fw
