#pragma once
// Phase segmentation of an uncapped power log for `flexwatt fit` (docs/simulator.md, "Bring
// your own job", rules S1–S7): the lead-in before training (idle, setup, or a pause the log
// starts in), training bursts, pauses (regular ones and rare long ones: two populations), and
// the tail after the last training. Bursts cut by the log's edges are partial and left out of
// the spacing statistics.
//
// Input: the node's per-GPU mean power, one sample per dt_s. Pure function of its input.

#include <cstddef>
#include <string>
#include <vector>

namespace fw::sim {

struct LowRun {
  size_t begin = 0, end = 0;  // samples [begin, end)
  double level_w = 0;         // median per-GPU power inside
  bool is_long = false;       // of the rare long population
};

struct Segmentation {
  double dt_s = 0.5;
  double train_w = 0;               // per-GPU training level (median of training samples)
  double train_sd_w = 0;            // robust sd of the smoothed training samples
  double threshold_w = 0;           // a sample below it (smoothed) is low
  size_t train_begin = 0;           // first training sample (end of the lead-in)
  size_t train_end = 0;             // one past the last training sample (start of the tail)
  double lead_w = 0;                // median level of the lead-in (0 when none)
  double tail_w = 0;                // median level of the tail (0 when none)
  bool starts_in_training = false;  // no lead-in: the first burst is partial
  std::vector<LowRun> pauses;       // complete pauses inside [train_begin, train_end)
  // Training time (s) between consecutive pauses of the same population; first bursts only
  // when complete (the log saw its start). Regular: between regular pauses, long pauses and
  // the training around them not counted as a break (the simulator's duty timer counts
  // training time only); long: total training time / long pauses.
  std::vector<double> regular_spacing_s;
  std::vector<double> regular_length_s, long_length_s;
  double long_spacing_s = 0;         // training seconds per long pause (0: none)
  double regular_w = 0, long_w = 0;  // median levels of the two populations
  double train_time_s = 0;           // training samples × dt in [train_begin, train_end)
  std::vector<char> steady;          // per sample: training, ≥ guard from any low sample
  std::vector<std::string> notes;    // what was decided and why (lead-in, populations, …)
};

// Segments `node_w` (per-GPU mean power per sample of dt_s). min_pause_s: shortest low run
// taken as a pause; guard_s: margin of `steady` from low samples.
Segmentation segment_log(const std::vector<double>& node_w, double dt_s, double min_pause_s = 2.0,
                         double guard_s = 2.0);

}  // namespace fw::sim
