// PFI (docs/sources.md §1b Eq. 1) on the shipped A100 sweep rows: the brief's reference values
// (data/a100_power_cap_sweep.md) are pt_mpt_13b_lg ≈ 1.40, ft_llama_8b_dolly ≈ 2.66.

#include "analysis/pfi.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/csv.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw {
namespace {

std::map<std::string, std::vector<PfiPoint>> read_rows() {
  std::map<std::string, std::vector<PfiPoint>> out;
  auto r = CsvReader::open(std::string(FLEXWATT_SOURCE_DIR) + "/data/a100_power_cap_sweep.csv");
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return out;
  (*r)->next();
  while ((*r)->next()) {
    const auto& f = (*r)->fields();
    PfiPoint p;
    EXPECT_TRUE(parse_double(f[1], p.cap_w) && parse_double(f[2], p.throughput) &&
                parse_double(f[3], p.power_w));
    out[std::string(f[0])].push_back(p);
  }
  return out;
}

TEST(Pfi, MatchesPublishedValuesOfSweepRows) {
  const auto rows = read_rows();
  ASSERT_EQ(rows.size(), 3u);
  auto pt = compute_pfi(rows.at("pt_mpt_13b_lg"));
  auto ft = compute_pfi(rows.at("ft_llama_8b_dolly"));
  auto inf = compute_pfi(rows.at("infer_llama_8b"));
  ASSERT_TRUE(pt.ok() && ft.ok() && inf.ok());
  EXPECT_NEAR(*pt, 1.40, 0.01);
  EXPECT_NEAR(*ft, 2.66, 0.01);
  EXPECT_NEAR(*inf, 2.58, 0.01);
}

TEST(Pfi, LinearIsOneAndOrderDoesNotMatter) {
  std::vector<PfiPoint> v = {{200, 50, 100}, {400, 100, 200}, {300, 75, 150}};
  EXPECT_NEAR(*compute_pfi(v), 1.0, 1e-12);
  // Throughput halves while power falls by a quarter: elastic, PFI 0.5.
  std::vector<PfiPoint> e = {{400, 100, 200}, {300, 50, 150}};
  EXPECT_NEAR(*compute_pfi(e), 0.5, 1e-12);
}

TEST(Pfi, PointsAtTmaxAreLeftOutAndErrors) {
  std::vector<PfiPoint> v = {{400, 100, 200}, {350, 100, 190}, {300, 80, 140}};
  EXPECT_NEAR(*compute_pfi(v), 0.3 / 0.2, 1e-12);
  std::vector<PfiPoint> near = {{400, 100, 200}, {350, 99.9, 190}, {300, 80, 140}};
  EXPECT_NEAR(*compute_pfi(near, 0.002), 1.5, 1e-12);
  EXPECT_FALSE(compute_pfi({{400, 100, 200}}).ok());
  EXPECT_FALSE(compute_pfi({{400, 100, 200}, {300, 100, 150}}).ok());
  EXPECT_FALSE(compute_pfi({{400, 100, 200}, {300, 0, 150}}).ok());
}

}  // namespace
}  // namespace fw
