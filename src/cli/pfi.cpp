// flexwatt pfi: run-time PFI prediction (studies/pfi_predict.hpp). `train` fits a ridge
// model on a simulated population and reports leave-one-out R²; `predict` applies a model (or
// one trained on the spot) to an uncapped trace.

#include <cstdio>

#include "cli/flag_checks.hpp"
#include "cli/verb.hpp"
#include "core/text_file.hpp"
#include "hw/gpu_catalog.hpp"
#include "report/svg_plot.hpp"
#include "studies/pfi_predict.hpp"

namespace fw::cli {
namespace {

int run_pfi(int argc, char** argv) {
  CLI::App app(
      "Predict a job's PFI from an uncapped trace (utilisation, memory activity, power vs TDP,\n"
      "phase structure) with a ridge model trained on simulated jobs.\n\n"
      "Examples:\n"
      "  flexwatt pfi train --jobs 300 --out pfi-model.json\n"
      "  flexwatt pfi predict my-trace/ --model pfi-model.json --gpu h200-sxm",
      "pfi");
  app.require_subcommand(1);
  std::string gpu = "h200-sxm", out, model_path, trace;
  int jobs = 300;
  uint64_t seed = 1;
  double lambda = 1.0;
  bool json = false;
  auto* train = app.add_subcommand("train", "fit on a simulated population, report LOO R²");
  train->add_option("--jobs", jobs, "simulated jobs (default 300)");
  train->add_option("--seed", seed, "seed (default 1)")->check(seed_value());
  train->add_option("--lambda", lambda, "ridge penalty on standardized features (default 1)")
      ->check(finite_in(0, 1e6, true));
  train->add_option("--out", out, "write the model JSON")->check(output_file());
  auto* predict = app.add_subcommand("predict", "predict the PFI of an uncapped trace");
  predict->add_option("trace", trace, "flexwatt trace directory or gpus.csv")->required();
  predict->add_option("--model", model_path, "model JSON (default: train 300 jobs now)");
  for (auto* s : {train, predict}) {
    s->add_option("--gpu", gpu, "GPU model (TDP for power_frac_tdp; default h200-sxm)");
    s->add_flag("--json", json, "print JSON");
  }
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  const hw::GpuCatalogEntry* spec = hw::find_gpu(gpu);
  if (!spec) return fail("pfi", Status::InvalidArgument("--gpu: unknown '" + gpu + "'"));
  if (train->parsed()) {
    auto r = studies::train_pfi(jobs, gpu, seed, lambda);
    if (!r.ok()) return fail("pfi", r.status());
    if (!out.empty()) {
      Status st = write_text_file(out, studies::pfi_model_json(r->model).dump(2) + "\n");
      if (!st.ok()) return fail("pfi", st);
    }
    std::printf("%s", json ? (studies::pfi_train_json(*r).dump(2) + "\n").c_str()
                           : studies::pfi_train_table(*r).c_str());
    return 0;
  }
  studies::PfiModel model;
  if (model_path.empty()) {
    auto r = studies::train_pfi(300, gpu, 1, 1.0);
    if (!r.ok()) return fail("pfi", r.status());
    model = r->model;
  } else {
    auto text = read_text_file(model_path);
    if (!text.ok()) return fail("pfi", text.status());
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded()) {
      return fail("pfi", Status::InvalidArgument(model_path + ": not a JSON model"));
    }
    auto m = studies::pfi_model_from_json(j, model_path);
    if (!m.ok()) return fail("pfi", m.status());
    model = *m;
  }
  auto x = studies::trace_features(trace, spec->tdp_w);
  if (!x.ok()) return fail("pfi", x.status());
  const double pfi = model.predict(*x);
  nlohmann::json jf = nlohmann::json::object();
  for (int k = 0; k < studies::kPfiFeatures; ++k) {
    jf[studies::pfi_feature_names()[k]] = (*x)[k];
  }
  if (json) {
    std::printf(
        "%s\n",
        nlohmann::json{{"trace", trace}, {"predicted_pfi", pfi}, {"features", jf}}.dump(2).c_str());
  } else {
    std::printf("predicted PFI %.2f  (model trained on simulated jobs)\nfeatures: %s\n", pfi,
                jf.dump().c_str());
  }
  return 0;
}

}  // namespace

FW_VERB("pfi", "predict a job's PFI from an uncapped trace (train on simulated jobs)", run_pfi);

}  // namespace fw::cli
