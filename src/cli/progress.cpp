#include "cli/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/verb.hpp"

namespace fw::cli {

bool progress_wanted(bool quiet) {
  if (quiet || !stderr_is_tty()) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

Progress::Progress(std::string verb, bool enabled)
    : verb_(std::move(verb)), enabled_(enabled), t0_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void Progress::draw_locked(const std::string& text, bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  std::fprintf(stderr, "\r%s: %s\033[K", verb_.c_str(), text.c_str());
  std::fflush(stderr);
}

void Progress::show(const std::string& text) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  draw_locked(text, false);
}

void Progress::count(const std::string& what, size_t done, size_t total) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (what != count_what_) {  // a new count: its own rate and estimate
    count_what_ = what;
    best_done_ = 0;
    count_t0_s_ = -1;
    eta_s_ = -1;
  }
  if (done < best_done_) return;  // workers may report out of order
  best_done_ = done;
  const double e = elapsed_s();
  if (count_t0_s_ < 0) {
    count_t0_s_ = e;
    count_done0_ = done;
  }
  char b[256];
  int n = std::snprintf(b, sizeof b, "%s %zu/%zu", what.c_str(), done, total);
  if (total > 0 && n > 0 && static_cast<size_t>(n) < sizeof b) {
    const double f = static_cast<double>(done) / static_cast<double>(total);
    n += std::snprintf(b + n, sizeof b - n, " (%.0f %%), %.0f s", 100 * f, e);
    // The rate since this count began (not since the verb started: its set-up is not the
    // count's), shown once it rests on 2 units and 2 s; smoothed so that uneven units (a
    // heavy controller's episodes after light ones) move it gradually.
    const double span_s = e - count_t0_s_;
    const size_t units = done - count_done0_;
    if (done < total && units >= 2 && span_s >= 2) {
      const double raw = static_cast<double>(total - done) * span_s / static_cast<double>(units);
      eta_s_ = eta_s_ < 0 ? raw : 0.7 * std::max(0.0, eta_s_ - (e - eta_at_s_)) + 0.3 * raw;
      eta_at_s_ = e;
    }
    if (done < total && eta_s_ >= 0 && static_cast<size_t>(n) < sizeof b) {
      std::snprintf(b + n, sizeof b - n, ", ~%.0f s left", std::max(1.0, eta_s_ - (e - eta_at_s_)));
    }
  }
  draw_locked(b, done == total);
}

void Progress::tick(double period_s, std::function<std::string()> text) {
  if (!enabled_ || ticker_.joinable()) return;
  const auto period = std::chrono::milliseconds(static_cast<int64_t>(std::lround(period_s * 1000)));
  ticker_ = std::thread([this, period, text = std::move(text)] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      draw_locked(text(), true);
      cv_.wait_for(lock, period, [this] { return stop_; });
    }
  });
}

void Progress::finish(bool keep) {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_) std::fprintf(stderr, keep ? "\n" : "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace fw::cli
