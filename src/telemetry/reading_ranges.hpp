#pragma once
// The sane range of every value a GPU reading can carry. Beyond it a value is garbage or in
// another unit (a node's total, kW or mW taken for W, a driver glitch): the trace readers refuse
// the row with file:line, the trace writer does not write it (trace_writer.hpp).

#include <string>

namespace fw {

// Assumptions (docs/analysis.md): per GPU, power (sensor or instantaneous) and cap at most
// 5000 W (the largest GPUs draw ~1.2-1.4 kW); an energy counter 0..1e15 J (30 years at 1 kW is
// 1e12 J); utilisation 0..1; SM clock 0..1e5 MHz; temperature -273.15..1000 degrees C.
enum class ReadingField { kPower, kCap, kEnergy, kUtil, kClock, kTemp };
inline constexpr double kMaxGpuPowerW = 5000;
inline constexpr double kMaxEnergyCounterJ = 1e15;
// The field's range, closed.
void sane_range(ReadingField f, double& lo, double& hi);
// True when v is NaN (unset) or in the field's range; no allocation (for hot paths).
bool in_sane_range(ReadingField f, double v);
// Empty when in_sane_range(f, v); else the problem, for a message.
std::string range_problem(ReadingField f, double v);

}  // namespace fw
