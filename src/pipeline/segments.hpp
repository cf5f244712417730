#pragma once
// A stage's cap segments: runs of its 1F1B phases in time order, each holding one cap. The
// order is cyclic: the cool-down and drain of one iteration run just before the fill and
// warm-up of the next, so a segment may wrap around the iteration boundary (a "bubble" cap).
//
// stage_segmentations(): every way to cut one stage's phases into segments that each last at
// least min_segment_s (phase_min_s: a lower bound on each phase's duration, e.g. its ops at the
// fastest clock), keeping only the finest: a segmentation whose segments could be cut further
// into segments that are all long enough allows nothing more, and is dropped. One segment for
// the whole iteration (a constant cap, never switched) is always allowed. five = false forbids a
// cut between fill and warm-up and between cool-down and drain (`--segments 3`). Each
// segmentation is a list of phase masks (bit p: Phase p); phases without ops (has_ops false)
// belong to no segment. Result: one or more segmentations, the finest valid ones.

#include <array>
#include <vector>

#include "pipeline/one_f_one_b.hpp"

namespace fw::pipeline {

std::vector<std::vector<int>> stage_segmentations(const std::array<double, kPhases>& phase_min_s,
                                                  const std::array<bool, kPhases>& has_ops,
                                                  double min_segment_s, bool five);

}  // namespace fw::pipeline
