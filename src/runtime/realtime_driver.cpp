#include "runtime/realtime_driver.hpp"

#include <algorithm>

#include "runtime/sd_notify.hpp"
#include "runtime/tick_loop.hpp"

namespace fw {

RealTimeStats RealTimeDriver::run(Clock& clock, const std::function<bool()>& stop_requested,
                                  const std::function<void(const RealTimeStats&)>& on_tick,
                                  const std::function<void()>& on_skip) {
  RealTimeStats st;
  const double scale = opt_.time_scale;
  ScaledClock scaled(clock, scale);
  Clock& loop_clock = scale == 1 ? clock : scaled;
  TickLoop loop(loop_clock, opt_.period_s, opt_.num_ticks, stop_requested, 0.05 * scale);
  int64_t index = 0;  // the plant's tick: taken and skipped ones
  auto take = [&](double now_s) {
    st.plant_time_s = static_cast<double>(index) * opt_.period_s;
    st.lateness_s = std::max(0.0, now_s - st.plant_time_s);
    st.lateness_max_s = std::max(st.lateness_max_s, st.lateness_s);
    ++st.ticks;
    if (st.lateness_s > 0.25 * opt_.period_s) ++st.late_ticks;
    on_tick(st);
    ++index;
  };
  double last_wd = -1e300;
  int64_t missed_seen = 0;
  while (loop.wait_next()) {
    const int64_t skipped = loop.missed() - missed_seen;
    missed_seen = loop.missed();
    st.missed = loop.missed();
    for (int64_t i = 0; i < skipped; ++i) {
      if (opt_.missed == MissedDeadlines::kCatchUp) {
        take(loop.tick_now_s());
        ++st.caught_up;
      } else {
        if (on_skip) on_skip();
        ++index;
      }
    }
    take(loop.tick_now_s());
    if (opt_.watchdog_s > 0 && clock.now_s() - last_wd >= opt_.watchdog_s) {
      sd_notify_send("WATCHDOG=1");
      last_wd = clock.now_s();
    }
    loop.complete();
  }
  st.missed = loop.missed();
  return st;
}

}  // namespace fw
