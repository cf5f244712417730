#pragma once
// Progress of a long verb on stderr: one line, redrawn in place ("\r" … "\033[K"), shown only
// when stderr is a terminal and --quiet was not given, and erased when the work ends, so the
// terminal keeps the verb's own output only. stdout (tables, --json) is never touched; piped
// or redirected runs print nothing extra. One helper for every verb that runs long (demo,
// eval, train, train-caps, caps, sweep, fleet-sim, dr).
//
// Contract: thread-safe (workers may report); at most one redraw per 100 ms except the last
// of a count (done == total), which is always drawn; finish() (and the destructor) clears the
// line, or with keep=true ends it with a newline. A disabled Progress does nothing.

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace fw::cli {

class Progress {
 public:
  // `verb` prefixes every line ("eval: …"); shown when enabled (see progress_wanted).
  Progress(std::string verb, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // "VERB: TEXT".
  void show(const std::string& text);
  // "VERB: WHAT DONE/TOTAL (P %), E s, ~R s left": R from the rate since this WHAT's count
  // began, smoothed, once 2 units and 2 s are done (none before).
  void count(const std::string& what, size_t done, size_t total);
  // Redraws text() every period_s on a thread of its own until finish(): for work that
  // reports nothing while it runs (fleet-sim's wall-clock run).
  void tick(double period_s, std::function<std::string()> text);
  // Stops any ticker; clears the line (keep: ends it with a newline instead).
  void finish(bool keep = false);
  // Seconds since construction.
  double elapsed_s() const;

 private:
  void draw_locked(const std::string& text, bool force);

  std::string verb_;
  bool enabled_;
  std::chrono::steady_clock::time_point t0_, last_draw_;
  bool drawn_ = false;
  size_t best_done_ = 0;
  // The count in progress (count()): its name, start (elapsed_s) and units done then, and the
  // smoothed estimate of the seconds left as of eta_at_s_ (< 0: none yet).
  std::string count_what_;
  double count_t0_s_ = -1, eta_s_ = -1, eta_at_s_ = 0;
  size_t count_done0_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread ticker_;
};

// True when a progress line should be shown: stderr is a terminal, TERM is not "dumb" and
// the verb was not given --quiet.
bool progress_wanted(bool quiet);

}  // namespace fw::cli
