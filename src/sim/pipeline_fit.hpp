#pragma once
// Fitting a pipeline job's per-stage work to measured runs, and predicting other runs
// (the Perseus artifact's Zeus runs: data/perseus/*_zeus_{global,local}.csv). Simulated.
//
// Model (sim/pipeline_job.hpp): stage s's forward takes t_unit · units_s at f_max and its
// backward twice that (assumption: the usual 2:1 backward/forward FLOP ratio); units_s comes
// from the run's partition (`custom:b0,b1,...`: layers b_{s+1} − b_s; `uniform_transformer`:
// total/pp each, total being the fitted partition's; assumption: embedding and head cost what
// a layer does). Four parameters per model are
// fitted by Nelder–Mead to its uniform-limit runs (relative time and energy errors, squared):
// t_unit and the stage load (u, m, c) of the GPU model. The same parameters then predict runs
// with per-stage limits, including other partitions of the same model.

#include <string>
#include <vector>

#include "core/status.hpp"
#include "sim/pipeline_job.hpp"
#include "sim/stage_work_table.hpp"

namespace fw::sim {

struct ZeusRun {
  std::string model, partition;
  int dp = 1, tp = 1, pp = 1, microbatches = 1;
  std::vector<double> caps_w;  // per stage
  double time_s = 0, energy_j = 0;
  int64_t line = 0;  // in its file
};

// Reads a Zeus CSV (global or local). InvalidArgument "path:line: column: why" on bad input.
Result<std::vector<ZeusRun>> read_zeus_csv(const std::string& path);

// Stage work units of a partition string for pp stages.
Result<std::vector<double>> partition_units(const std::string& partition, int pp);

struct PipelineFit {
  std::string model, partition;
  double t_unit_s = 0;
  double total_units = 0;  // of the fitted partition (a uniform partition splits as many)
  // Stage work = mean + imbalance · (units_s − mean): 1 follows the layer count, 0 balanced.
  double imbalance = 1;
  Load load;
  // Extra work on the last stage (the head and loss), as a share of the mean stage's work.
  double head = 0;
  // Not empty: the measured cap response (fit_cap_response_runs) replaces the GPU model.
  CapResponse response;
  // Not empty: the profiled work split (fit_profiled_runs): stage s's forward and backward are
  // t_unit_s · stage_work[s] (t_unit_s a dimensionless scale then); units, imbalance and head
  // are unused.
  std::vector<PipelineStageWork> stage_work;
  // The calibrated cap range: the lowest and highest cap of the fitted runs.
  double min_cap_w = 0, max_cap_w = 0;
  double max_err = 0;  // largest |relative error| over the fitted runs (time or energy)
  int evals = 0;
};

// A job spec for run r with the fit's parameters (units from r's own partition).
Result<PipelineJobSpec> pipeline_spec_for(const ZeusRun& r, const PipelineFit& fit,
                                          const GpuPreset& gpu, double blocking_w);

// Fits one model's uniform-limit runs (all of the same model and partition).
Result<PipelineFit> fit_pipeline_runs(const std::vector<ZeusRun>& runs, const GpuPreset& gpu,
                                      double blocking_w);

// The same work parameters (t_unit, imbalance, head) with the measured cap response in place
// of the GPU model: speed and power under a cap come from the runs themselves (every GPU at one
// limit), so the fit reproduces them up to the work split; the GPU model's constants are not
// used (the GPU's cap range still clamps the caps). The work split is the one parameter a uniform
// limit hardly sees (every stage slows by the same factor): imbalance and head are set by the runs'
// blocking energy alone. InvalidArgument when a run has per-stage limits or the runs have fewer
// than two caps.
Result<PipelineFit> fit_cap_response_runs(const std::vector<ZeusRun>& runs, const GpuPreset& gpu,
                                          double blocking_w);

// The cap response of fit_cap_response_runs with the work split measured on the job in place of
// the layer counts: stage s's forward and backward are scale · split[s] (the profile's seconds
// at the maximum clock; only their ratios matter). Fitted on the uniform-limit runs by
// Nelder–Mead: the scale and the power while computing where the cap does not bind. Same errors
// as fit_cap_response_runs, and InvalidArgument when split does not have one entry per stage.
Result<PipelineFit> fit_profiled_runs(const std::vector<ZeusRun>& runs,
                                      const std::vector<PipelineStageWork>& split,
                                      const GpuPreset& gpu, double blocking_w);

// What the profiled split made of a per-stage-limit row.
enum class ProfiledRow {
  kNotProfiled,   // no stage work for the row's model and partition: not predicted
  kOutsideRange,  // a cap outside the model's uniform runs' cap range: not predicted
  kPredicted,     // predicted with fit_profiled_runs' parameters
};
const char* profiled_row_name(ProfiledRow p);  // "not_profiled", "outside_calibrated_range", ...

struct PipelinePrediction {
  ZeusRun run;
  double time_s = 0, energy_j = 0;
  // Diagnostic, not a prediction: the same physics with each stage's work fitted to this
  // model's per-stage-limit runs themselves (and its uniform runs); NaN where not computed.
  double split_time_s = 0, split_energy_j = 0;
  std::vector<double> split_work;  // the fitted work per stage, relative to the heaviest
  // With the profiled work split (validate_pipeline_runs' `profiled`); NaN unless kPredicted.
  ProfiledRow profiled = ProfiledRow::kNotProfiled;
  double profiled_time_s = 0, profiled_energy_j = 0;
  double time_err() const { return time_s / run.time_s - 1; }
  double energy_err() const { return energy_j / run.energy_j - 1; }
};

// Fits every (model, partition) of `global` and predicts every run of `local` whose model was
// fitted (the first fitted partition of that model supplies the parameters).
struct PipelineValidation {
  std::vector<PipelineFit> fits;
  std::vector<PipelineFit> profiled_fits;  // one per fitted (model, partition) with stage work
  std::vector<PipelinePrediction> rows;
};
// model kGpuModel: fit_pipeline_runs; kCapResponse: fit_cap_response_runs, and with
// work_split_diagnostic the diagnostic of PipelinePrediction (rows of the fitted partition
// only; seconds of CPU per 8-stage model). With kCapResponse and `profiled` (the stage work of
// this GPU set) not empty, each fitted (model, partition) with an entry of as many stages is
// also fitted by fit_profiled_runs, and each local row gets PipelinePrediction::profiled: rows
// whose caps all lie within the model's uniform caps and whose (model, partition) was profiled
// are predicted; the others are flagged, not extrapolated.
enum class PipelineModel { kGpuModel, kCapResponse };
Result<PipelineValidation> validate_pipeline_runs(const std::vector<ZeusRun>& global,
                                                  const std::vector<ZeusRun>& local,
                                                  const GpuPreset& gpu, double blocking_w,
                                                  PipelineModel model = PipelineModel::kGpuModel,
                                                  bool work_split_diagnostic = false,
                                                  const std::vector<StageWorkEntry>& profiled = {});

}  // namespace fw::sim
