#include "runtime/stop_signals.hpp"

#include <atomic>

namespace fw {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void fw_on_stop_signal(int) { g_stop.store(true); }

}  // namespace

StopSignals::StopSignals() {
  g_stop.store(false);
  old_int_ = std::signal(SIGINT, fw_on_stop_signal);
  old_term_ = std::signal(SIGTERM, fw_on_stop_signal);
}

StopSignals::~StopSignals() {
  std::signal(SIGINT, old_int_);
  std::signal(SIGTERM, old_term_);
}

bool StopSignals::requested() { return g_stop.load(); }
void StopSignals::request() { g_stop.store(true); }

}  // namespace fw
