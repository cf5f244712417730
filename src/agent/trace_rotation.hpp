#pragma once
// TraceRotation: the agent's recorded trace as numbered segments trace_dir/seg-NNNNNN, one job:
// which recorder the loop writes to now.
//   open(): continues after the highest seg-N found (a restart never overwrites the previous
//     run's trace) and creates the first segment;
//   tick(): counts a recorded tick; after rotate_ticks it starts the next segment and returns
//     true (the caller hands recorder() to the loop). The finished segment is closed (flushed,
//     meta.json written) and the segment `keep` back deleted off the loop thread, so a rotation
//     costs the loop only the new segment's creation;
//   close(): closes the segment in force and waits for the last closer.
// A segment that cannot be created is logged and the trace pauses until the next rotation. The
// loop thread only (the closer thread touches only what it was handed).

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "control/recorder.hpp"

namespace fw::agent {

class TraceRotation {
 public:
  // `meta` gives each segment's meta.json fields when it is closed.
  TraceRotation(std::string dir, int64_t rotate_ticks, int keep,
                std::function<nlohmann::json()> meta);
  ~TraceRotation();
  TraceRotation(const TraceRotation&) = delete;
  TraceRotation& operator=(const TraceRotation&) = delete;

  void open();
  bool tick();
  Recorder* recorder() const { return recorder_.get(); }
  void close();

 private:
  void rotate();

  std::string dir_;
  int64_t rotate_ticks_;
  int keep_;
  std::function<nlohmann::json()> meta_;
  std::unique_ptr<Recorder> recorder_;
  int64_t ticks_ = 0;
  int segment_ = 0;
  std::thread closer_;
};

}  // namespace fw::agent
