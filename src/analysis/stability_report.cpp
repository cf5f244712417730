#include "analysis/stability_report.hpp"

#include <cmath>

#include "analysis/json_fields.hpp"
#include "core/format.hpp"
#include "core/text_table.hpp"

namespace fw {

namespace {

using OJson = nlohmann::ordered_json;

OJson nn(double v) { return num_or_null<OJson>(v); }

// A fraction as a percentage (two decimals), "-" when NaN.
std::string pct(double frac) { return std::isfinite(frac) ? format_fixed(100 * frac, 2) : "-"; }
std::string num(double v, int sig = 4) { return std::isfinite(v) ? format_g(v, sig) : "-"; }
// Watts (or W/s) with enough digits for a site's megawatts.
std::string watts(double v) { return std::isfinite(v) ? format_g(v, 6) : "-"; }

std::string energy_text(double j) {
  if (j >= 3.6e9) return format_g(j / 3.6e9, 4) + " MWh";
  if (j >= 3.6e6) return format_g(j / 3.6e6, 4) + " kWh";
  if (j >= 1e3) return format_g(j / 1e3, 4) + " kJ";
  return format_g(j, 4) + " J";
}

}  // namespace

// Long by design: every field of the document, in its order.
OJson stability_json(const StabilityReport& r, const std::optional<ReferenceComparison>& ref,
                     const std::vector<LimitCheck>& limits) {
  OJson j;
  j["trace"] = r.path;
  j["format"] = r.format;
  j["series"] = r.series;
  j["gpus"] = r.gpus;
  j["samples"] = r.samples;
  j["duration_s"] = r.duration_s;
  j["energy_j"] = r.energy_j;
  j["mean_w"] = r.mean_w;
  j["peak_w"] = r.peak_w;
  j["duplicates"] = r.duplicates;
  j["incomplete_ticks"] = r.incomplete_ticks;
  j["unsorted_rows"] = r.unsorted_rows;
  OJson g;
  g["period_s"] = r.period_s;
  g["samples"] = r.grid_samples;
  g["method"] = "median step; linear interpolation";
  g["uniform_input"] = r.uniform_input;
  g["max_step_s"] = r.max_step_s;
  g["gaps"] = r.gaps;
  g["gap_s"] = r.gap_s;
  j["grid"] = g;
  j["ramp_definition"] =
      "(mean of the last n samples - mean of the n before) / (n * period_s), n = "
      "round(window_s / period_s); max over the trace; up and down as magnitudes";
  OJson ramps = OJson::array();
  for (const RampStats& x : r.ramps) {
    OJson e;
    e["window_s"] = x.window_s;
    e["effective_window_s"] = nn(x.effective_window_s);
    e["max_up_w_per_s"] = nn(x.max_up_w_per_s);
    e["max_up_pct_of_peak_per_s"] = nn(100 * x.max_up_frac_per_s);
    e["max_up_at_s"] = nn(x.max_up_at_s);
    e["max_down_w_per_s"] = nn(x.max_down_w_per_s);
    e["max_down_pct_of_peak_per_s"] = nn(100 * x.max_down_frac_per_s);
    e["max_down_at_s"] = nn(x.max_down_at_s);
    e["skipped"] = x.skipped.empty() ? OJson(nullptr) : OJson(x.skipped);
    ramps.push_back(e);
  }
  j["ramps"] = ramps;
  j["swing_definition"] = "max - min over every window of window_s (sliding by one sample)";
  OJson swings = OJson::array();
  for (const SwingStats& x : r.swings) {
    OJson e;
    e["window_s"] = x.window_s;
    e["effective_window_s"] = nn(x.effective_window_s);
    e["windows"] = x.positions;
    e["max_w"] = nn(x.max_w);
    e["max_pct_of_peak"] = nn(100 * x.max_frac);
    e["max_at_s"] = nn(x.max_at_s);
    e["p95_w"] = nn(x.p95_w);
    e["p95_pct_of_peak"] = nn(100 * x.p95_frac);
    e["skipped"] = x.skipped.empty() ? OJson(nullptr) : OJson(x.skipped);
    swings.push_back(e);
  }
  j["swings"] = swings;
  const BandEnergy& b = r.band;
  OJson band;
  band["lo_hz"] = b.lo_hz;
  band["hi_hz"] = b.hi_hz;
  band["effective_lo_hz"] = b.visible ? OJson(b.lo_hz) : OJson(nullptr);
  band["effective_hi_hz"] = b.visible ? OJson(b.hi_effective_hz) : OJson(nullptr);
  band["nyquist_hz"] = b.nyquist_hz;
  band["clipped"] = b.clipped;
  band["visible"] = b.visible;
  band["resolution_hz"] = b.resolution_hz;
  band["fraction"] = nn(b.fraction);
  band["method"] = "periodogram: linear detrend, periodic Hann window, zero-padded FFT";
  band["segments"] = b.segments;
  j["band"] = band;
  if (ref) {
    OJson e;
    e["trace"] = ref->path;
    e["energy_j"] = ref->energy_j;
    e["reference_energy_j"] = ref->ref_energy_j;
    e["duration_s"] = ref->duration_s;
    e["reference_duration_s"] = ref->ref_duration_s;
    e["energy_overhead_pct"] = nn(ref->energy_overhead_pct);
    e["tokens"] = nn(ref->tokens);
    e["reference_tokens"] = nn(ref->ref_tokens);
    e["throughput_loss_pct"] = nn(ref->throughput_loss_pct);
    e["energy_per_token_overhead_pct"] = nn(ref->energy_per_token_overhead_pct);
    e["throughput_note"] =
        ref->throughput_note.empty() ? OJson(nullptr) : OJson(ref->throughput_note);
    j["reference"] = e;
  } else {
    j["reference"] = nullptr;
  }
  OJson lim = OJson::array();
  bool violated = false;
  for (const LimitCheck& c : limits) {
    OJson e;
    e["name"] = c.name;
    e["limit"] = c.limit;
    e["value"] = nn(c.value);
    e["window_s"] = nn(c.window_s);
    e["violated"] = c.violated;
    violated |= c.violated;
    lim.push_back(e);
  }
  j["limits"] = lim;
  j["violated"] = violated;
  j["notes"] = r.notes;
  return j;
}

// Long by design: the whole text report, section by section.
std::string stability_text(const StabilityReport& r, const std::optional<ReferenceComparison>& ref,
                           const std::vector<LimitCheck>& limits) {
  const TextStyle style;
  std::string out;
  std::string what = r.series == "node" ? "node power, the sum of " + std::to_string(r.gpus) +
                                              " GPU" + (r.gpus == 1 ? "" : "s")
                                        : "site power";
  out +=
      wrap_text("Power stability of " + r.path + " (" + r.format + ", " + what + ")", 120, "  ") +
      "\n";
  out += "  " + std::to_string(r.samples) + " samples over " + num(r.duration_s, 6) +
         " s, sample period " + num(r.period_s) + " s" +
         (r.uniform_input ? "" : " (median; resampled to a uniform grid)") + "; peak " +
         watts(r.peak_w) + " W, mean " + watts(r.mean_w) + " W, energy " + energy_text(r.energy_j) +
         "\n\n";

  out +=
      "Ramps: change of the mean over two adjacent windows of W, per second (docs/stability.md)\n";
  TextTable t;
  t.label_header = "window_s";
  for (const char* h : {"up W/s", "up %pk/s", "up at s", "down W/s", "down %pk/s", "down at s"}) {
    t.columns.push_back({h, 1});
  }
  for (const RampStats& x : r.ramps) {
    if (!x.skipped.empty()) {
      t.rows.push_back({num(x.window_s), "-", "-", "-", "-", "-", "-"});
      continue;
    }
    t.rows.push_back({num(x.window_s), watts(x.max_up_w_per_s), pct(x.max_up_frac_per_s),
                      num(x.max_up_at_s, 6), watts(x.max_down_w_per_s), pct(x.max_down_frac_per_s),
                      num(x.max_down_at_s, 6)});
  }
  out += render_table(t, style) + "\n";

  out += "Swings: max - min within any window of W\n";
  TextTable s;
  s.label_header = "window_s";
  for (const char* h : {"max W", "max %pk", "max at s", "p95 W", "p95 %pk", "windows"}) {
    s.columns.push_back({h, 1});
  }
  for (const SwingStats& x : r.swings) {
    if (!x.skipped.empty()) {
      s.rows.push_back({num(x.window_s), "-", "-", "-", "-", "-", "0"});
      continue;
    }
    s.rows.push_back({num(x.window_s), watts(x.max_w), pct(x.max_frac), num(x.max_at_s, 6),
                      watts(x.p95_w), pct(x.p95_frac), std::to_string(x.positions)});
  }
  out += render_table(s, style) + "\n";

  const BandEnergy& b = r.band;
  std::string band = "Band energy " + num(b.lo_hz) + "-" + num(b.hi_hz) + " Hz: ";
  if (!b.visible) {
    band += "not visible (above the trace's Nyquist frequency)";
  } else {
    band += pct(b.fraction) + " % of the detrended signal's spectral energy";
    if (b.clipped) {
      band += " (band clipped to " + num(b.lo_hz) + "-" + num(b.hi_effective_hz) + " Hz)";
    }
  }
  out += wrap_text(band, 120, "  ") + "\n";
  out += "  Nyquist " + num(b.nyquist_hz) + " Hz, resolution " + num(b.resolution_hz) +
         " Hz; periodogram: linear detrend, Hann window, " + std::to_string(b.segments) +
         " segment" + (b.segments == 1 ? "" : "s") + "\n";

  if (ref) {
    out += "\nAgainst the reference " + ref->path + ":\n";
    out += "  energy " + energy_text(ref->energy_j) + " vs " + energy_text(ref->ref_energy_j) +
           " (" + num(ref->duration_s, 6) + " s vs " + num(ref->ref_duration_s, 6) +
           " s): energy overhead " + format_fixed(ref->energy_overhead_pct, 2) + " %\n";
    if (ref->throughput_note.empty()) {
      out += "  tokens " + num(ref->tokens, 8) + " vs " + num(ref->ref_tokens, 8) +
             ": throughput loss " + format_fixed(ref->throughput_loss_pct, 2) +
             " %, energy per token " +
             (std::isfinite(ref->energy_per_token_overhead_pct)
                  ? format_fixed(ref->energy_per_token_overhead_pct, 2) + " %"
                  : std::string("-")) +
             "\n";
    } else {
      out += wrap_text("  throughput loss: " + ref->throughput_note, 120, "    ") + "\n";
    }
  }
  if (!limits.empty()) {
    out += "\nLimits\n";
    TextTable l;
    l.label_header = "check";
    for (const char* h : {"value", "limit", "window_s", "result"}) l.columns.push_back({h, 1});
    for (const LimitCheck& c : limits) {
      l.rows.push_back({c.name, num(c.value, 6), num(c.limit, 6), num(c.window_s),
                        c.violated ? "VIOLATED" : "ok"});
    }
    out += render_table(l, style);
  }
  if (!r.notes.empty()) {
    out += "\nNotes\n";
    for (const std::string& n : r.notes) out += wrap_text("- " + n, 120, "  ") + "\n";
  }
  return out;
}

}  // namespace fw
