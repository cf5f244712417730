// The GPU catalogue: lookups and the facts the simulator and the analysis rely on.

#include "hw/gpu_catalog.hpp"

#include <gtest/gtest.h>

#include <string>

namespace fw::hw {
namespace {

TEST(GpuCatalog, FindsEveryEntryByName) {
  ASSERT_EQ(gpu_catalog().size(), 5u);
  for (const GpuCatalogEntry& g : gpu_catalog()) {
    EXPECT_EQ(find_gpu(g.name), &g) << g.name;
    EXPECT_NE(std::string(gpu_names()).find(std::string(g.name)), std::string::npos) << g.name;
  }
  EXPECT_EQ(find_gpu("H100-SXM5"), nullptr);  // exact match only
  EXPECT_EQ(find_gpu(""), nullptr);
}

TEST(GpuCatalog, FindsByNvmlDeviceName) {
  EXPECT_EQ(find_gpu_by_device_name("NVIDIA H100 80GB HBM3"), find_gpu("h100-sxm5"));
  EXPECT_EQ(find_gpu_by_device_name("NVIDIA A100-SXM4-80GB"), find_gpu("a100-sxm4-80gb"));
  EXPECT_EQ(find_gpu_by_device_name("NVIDIA H200"), find_gpu("h200-sxm"));
  EXPECT_EQ(find_gpu_by_device_name("NVIDIA A40"), find_gpu("a40"));
  EXPECT_EQ(find_gpu_by_device_name("NVIDIA A100 80GB PCIe"), find_gpu("a100-pcie-80gb"));
  EXPECT_EQ(find_gpu_by_device_name("Fake NVIDIA GPU"), nullptr);
}

// A device name no entry matches exactly is recognised by its family (the catalogue's
// `family` field; it replaced a hand-kept family list in sim/fit_gpu.cpp).
TEST(GpuCatalog, FindsByFamily) {
  EXPECT_EQ(find_gpu_family("nvidia a100-sxm4-40gb"), find_gpu("a100-sxm4-80gb"));
  EXPECT_EQ(find_gpu_family("nvidia h100 pcie"), find_gpu("h100-sxm5"));
  EXPECT_EQ(find_gpu_family("nvidia h200 nvl"), find_gpu("h200-sxm"));
  EXPECT_EQ(find_gpu_family("nvidia a40-48q"), nullptr);  // a40: matched by name only
  EXPECT_EQ(find_gpu_family("nvidia b200"), nullptr);
}

TEST(GpuCatalog, NamesListInTableOrder) {
  EXPECT_EQ(std::string(gpu_names()), "a100-sxm4-80gb, h100-sxm5, h200-sxm, a40, a100-pcie-80gb");
}

TEST(GpuCatalog, NameplatesAndCapRanges) {
  const GpuCatalogEntry* a100 = find_gpu("a100-sxm4-80gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->tdp_w, 400);
  EXPECT_EQ(a100->min_cap_w, 100);
  EXPECT_EQ(a100->hbm_gb, 80);
  EXPECT_FALSE(a100->power_avg_1s);
  const GpuCatalogEntry* h200 = find_gpu("h200-sxm");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->tdp_w, 700);
  EXPECT_EQ(h200->hbm_gb, 141);
  EXPECT_TRUE(h200->power_avg_1s);
}

TEST(GpuCatalog, EveryEntryIsConsistent) {
  for (const GpuCatalogEntry& g : gpu_catalog()) {
    SCOPED_TRACE(std::string(g.name));
    EXPECT_GT(g.min_cap_w, 0);
    EXPECT_LE(g.min_cap_w, g.default_cap_w);
    EXPECT_LE(g.default_cap_w, g.max_cap_w);
    EXPECT_LE(g.max_cap_w, g.tdp_w);
    EXPECT_LT(g.idle_bare_w, g.idle_ctx_w);
    EXPECT_LT(g.idle_ctx_w, g.min_cap_w);
    EXPECT_LE(g.sm_clock_min_mhz, g.sm_clock_idle_mhz);
    EXPECT_LT(g.sm_clock_idle_mhz, g.sm_clock_max_mhz);
    EXPECT_GT(g.hbm_gb, 0);
  }
}

}  // namespace
}  // namespace fw::hw

namespace fw::hw {
namespace {

// Issue 27: a waiting (point-to-point blocking) GPU's power comes from the catalogue, with its
// source (the Perseus artifact's notebook: A100 83.64 W, A40 70.38 W); unknown (0) where no
// measurement was found, so that planner and scenarios demand it.
TEST(GpuCatalog, BlockingPowerFromTheArtifactNotebook) {
  EXPECT_DOUBLE_EQ(find_gpu("a100-sxm4-80gb")->blocking_w, 83.64);
  EXPECT_DOUBLE_EQ(find_gpu("a100-pcie-80gb")->blocking_w, 83.64);
  EXPECT_DOUBLE_EQ(find_gpu("a40")->blocking_w, 70.38);
  EXPECT_EQ(find_gpu("h100-sxm5")->blocking_w, 0);
  EXPECT_EQ(find_gpu("h200-sxm")->blocking_w, 0);
  for (const GpuCatalogEntry& g : gpu_catalog()) {
    SCOPED_TRACE(std::string(g.name));
    EXPECT_GE(g.blocking_w, 0);
    EXPECT_LT(g.blocking_w, g.min_cap_w);  // a waiting GPU draws less than any cap allows
  }
}

}  // namespace
}  // namespace fw::hw
