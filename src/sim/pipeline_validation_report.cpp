#include "sim/pipeline_validation_report.hpp"

#include <cmath>

#include "core/format.hpp"
#include "sim/gpu_model.hpp"
#include "sim/pipeline_fit.hpp"
#include "sim/stage_work_table.hpp"

namespace fw::sim {
namespace {

constexpr double kTolerance = 0.05;

struct ValidateSet {
  const char* file;  // <file>_zeus_{global,local}.csv
  const char* gpu;   // its blocking power: the catalogue's (hw/gpu_catalog.hpp)
};
constexpr ValidateSet kValidateSets[] = {{"A100", "a100-pcie-80gb"}, {"A40", "a40"}};

}  // namespace

Result<PipelineValidationReport> pipeline_validation_report(const std::string& dir, bool gpu_model,
                                                            const std::string& stage_work) {
  const auto model = gpu_model ? PipelineModel::kGpuModel : PipelineModel::kCapResponse;
  PipelineValidationReport out;
  out.json = {{"model", gpu_model ? "gpu-model" : "cap-response"},
              {"data", dir},
              {"simulated_vs_measured", true},
              {"tolerance", kTolerance},
              {"sets", nlohmann::json::array()}};
  const bool with_profiled = !gpu_model && !stage_work.empty();
  if (with_profiled) out.json["stage_work"] = stage_work;
  std::vector<StageWorkEntry> table;
  bool table_read = false;
  std::string& t = out.text;
  for (const auto& set : kValidateSets) {
    const std::string base = dir + "/" + set.file;
    FW_ASSIGN_OR_RETURN(std::vector<ZeusRun> global, read_zeus_csv(base + "_zeus_global.csv"));
    FW_ASSIGN_OR_RETURN(std::vector<ZeusRun> local, read_zeus_csv(base + "_zeus_local.csv"));
    if (with_profiled && !table_read) {
      FW_ASSIGN_OR_RETURN(table, read_stage_work_csv(stage_work));
      table_read = true;
    }
    std::vector<StageWorkEntry> profiled;
    for (const auto& e : table) {
      if (e.gpu == set.file) profiled.push_back(e);
    }
    const GpuPreset& preset = *find_gpu_preset(set.gpu);
    FW_ASSIGN_OR_RETURN(PipelineValidation v,
                        validate_pipeline_runs(global, local, preset, preset.blocking_w, model,
                                               !gpu_model, profiled));
    nlohmann::json js{{"file", set.file},
                      {"gpu", set.gpu},
                      {"blocking_w", preset.blocking_w},
                      {"fits", nlohmann::json::array()},
                      {"rows", nlohmann::json::array()}};
    t += strprintf("%s (%s, blocking %.2f W)\n", set.file, set.gpu, preset.blocking_w);
    for (const auto& f : v.fits) {
      js["fits"].push_back({{"model", f.model},
                            {"partition", f.partition},
                            {"t_unit_s", f.t_unit_s},
                            {"imbalance", f.imbalance},
                            {"head", f.head},
                            {"uncapped_w", f.response.uncapped_w},
                            {"uniform_max_err", f.max_err}});
      const std::string uncapped =
          gpu_model ? "" : " uncapped " + std::to_string(int(f.response.uncapped_w + 0.5)) + " W";
      t += strprintf("  fit %-17s imbalance %.2f head %.2f%s: uniform runs max |err| %.1f %%\n",
                     f.model.c_str(), f.imbalance, f.head, uncapped.c_str(), 100 * f.max_err);
    }
    js["profiled_fits"] = nlohmann::json::array();
    for (const auto& f : v.profiled_fits) {
      js["profiled_fits"].push_back({{"model", f.model},
                                     {"partition", f.partition},
                                     {"scale", f.t_unit_s},
                                     {"uncapped_w", f.response.uncapped_w},
                                     {"calibrated_range_w", {f.min_cap_w, f.max_cap_w}},
                                     {"uniform_max_err", f.max_err}});
      t += strprintf(
          "  profiled %-12s scale %.2f uncapped %d W, calibrated caps %d-%d W: uniform runs max "
          "|err| %.1f %%\n",
          f.model.c_str(), f.t_unit_s, int(f.response.uncapped_w + 0.5), int(f.min_cap_w),
          int(f.max_cap_w), 100 * f.max_err);
    }
    int within = 0, split_within = 0, split_rows = 0;
    int prof_within = 0, prof_rows = 0, prof_outside = 0, prof_none = 0;
    t += strprintf("  %-17s %-11s %-32s %9s %9s %7s %7s | %7s %7s", "model", "partition", "caps W",
                   "time s", "measured", "d time", "d energy", "split t", "split e");
    t += with_profiled ? strprintf(" | %7s %7s\n", "prof t", "prof e") : std::string("\n");
    for (const auto& r : v.rows) {
      const bool ok =
          std::abs(r.time_err()) <= kTolerance && std::abs(r.energy_err()) <= kTolerance;
      within += ok;
      const bool has_split = std::isfinite(r.split_time_s);
      const double st = has_split ? r.split_time_s / r.run.time_s - 1 : NAN;
      const double se = has_split ? r.split_energy_j / r.run.energy_j - 1 : NAN;
      if (has_split) {
        ++split_rows;
        split_within += std::abs(st) <= kTolerance && std::abs(se) <= kTolerance;
      }
      std::string caps;
      for (double c : r.run.caps_w) caps += std::to_string(static_cast<int>(c)) + " ";
      nlohmann::json row{{"model", r.run.model},
                         {"partition", r.run.partition},
                         {"line", r.run.line},
                         {"caps_w", r.run.caps_w},
                         {"time_s", r.time_s},
                         {"measured_time_s", r.run.time_s},
                         {"energy_j", r.energy_j},
                         {"measured_energy_j", r.run.energy_j},
                         {"time_err", r.time_err()},
                         {"energy_err", r.energy_err()},
                         {"within", ok}};
      if (has_split) {
        row["split_time_err"] = st;
        row["split_energy_err"] = se;
        row["split_work"] = r.split_work;
      }
      bool prof_ok = false;
      std::string prof_text;
      if (with_profiled) {
        const double pt = r.profiled_time_s / r.run.time_s - 1;
        const double pe = r.profiled_energy_j / r.run.energy_j - 1;
        nlohmann::json pj{{"status", profiled_row_name(r.profiled)}};
        switch (r.profiled) {
          case ProfiledRow::kPredicted:
            ++prof_rows;
            prof_ok = std::abs(pt) <= kTolerance && std::abs(pe) <= kTolerance;
            prof_within += prof_ok;
            pj.update({{"time_s", r.profiled_time_s},
                       {"energy_j", r.profiled_energy_j},
                       {"time_err", pt},
                       {"energy_err", pe},
                       {"within", prof_ok}});
            prof_text = strprintf(" | %+6.1f%% %+6.1f%%%s", 100 * pt, 100 * pe,
                                  prof_ok ? "" : "  prof MISS");
            break;
          case ProfiledRow::kOutsideRange:
            ++prof_outside;
            prof_text = " |       -       -  outside calibrated range";
            break;
          case ProfiledRow::kNotProfiled:
            ++prof_none;
            prof_text = " |       -       -  not profiled";
            break;
        }
        row["profiled"] = pj;
      }
      js["rows"].push_back(row);
      const std::string part =
          r.run.partition == "uniform_transformer" ? "uniform" : r.run.partition.substr(7);
      const std::string split = has_split ? strprintf("%+6.1f%% %+6.1f%%", 100 * st, 100 * se)
                                          : std::string("      -       -");
      t += strprintf("  %-17s %-11.11s %-32s %9.2f %9.2f %+6.1f%% %+6.1f%% | %s%s%s\n",
                     r.run.model.c_str(), part.c_str(), caps.c_str(), r.time_s, r.run.time_s,
                     100 * r.time_err(), 100 * r.energy_err(), split.c_str(), ok ? "" : "  MISS",
                     prof_text.c_str());
    }
    js["within"] = within;
    js["split_within"] = split_within;
    js["split_rows"] = split_rows;
    t += strprintf("  %d of %zu rows within +-5 %% in time and energy", within, v.rows.size());
    if (!gpu_model) {
      t += strprintf("; with the work split fitted to the rows themselves (diagnostic): %d of %d",
                     split_within, split_rows);
    }
    t += "\n";
    if (with_profiled) {
      js["profiled_within"] = prof_within;
      js["profiled_rows"] = prof_rows;
      js["outside_calibrated_range"] = prof_outside;
      js["not_profiled"] = prof_none;
      t += strprintf(
          "  profiled work split: %d of %d rows inside the calibrated cap range within +-5 %% in "
          "time and energy; %d rows outside the calibrated range (not predicted), %d rows "
          "without a profile of their partition\n",
          prof_within, prof_rows, prof_outside, prof_none);
    }
    out.json["sets"].push_back(js);
  }
  return out;
}

}  // namespace fw::sim
