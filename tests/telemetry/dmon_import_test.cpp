#include "telemetry/dmon_import.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "import_read.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw {
namespace {

using Read = testing::ImportRead;

// period_s 0: --dmon-period-s not given.
Read read(const std::string& name, const std::string& text, double period_s = 0.5) {
  TraceReaderOptions o;
  o.dmon_period_s = period_s == 0 ? kUnset : period_s;
  return testing::read_import("fw_dmon_" + name, text, o, TraceFormat::kDcgmiDmon);
}

// Two GPUs, three samples, headers repeated after the second sample (as dmon prints them).
const std::string kLog =
    "#Entity   POWER     TOTEC\n"
    "ID\n"
    "GPU 0     245.3     1000000\n"
    "GPU 1     250.5     2000000\n"
    "GPU 0     300.0     1150000\n"
    "GPU 1     N/A       2125000\n"
    "#Entity   POWER     TOTEC\n"
    "ID\n"
    "GPU 0     310.25    1300000\n"
    "GPU 1     260       N/A\n";

TEST(DmonImport, DetectsTheHeader) {
  EXPECT_TRUE(is_dmon_header("#Entity   POWER  TOTEC"));
  EXPECT_TRUE(is_dmon_header("# Entity POWER"));
  EXPECT_TRUE(is_dmon_header("1753572729.5 #Entity POWER"));
  EXPECT_FALSE(is_dmon_header("time_s,gpu,power_w"));
  EXPECT_FALSE(is_dmon_header("Entity POWER"));
  EXPECT_FALSE(is_dmon_header("x #Entity POWER"));
}

TEST(DmonImport, RowsUnitsSamplesAndRepeatedHeaders) {
  Read r = read("log.txt", kLog);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.missing, 1);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.rows[0].reading.gpu, 0);
  EXPECT_DOUBLE_EQ(r.rows[0].reading.power_w, 245.3);
  EXPECT_DOUBLE_EQ(r.rows[0].reading.energy_j, 1000.0);  // mJ -> J
  EXPECT_EQ(r.rows[0].line, 3);
  EXPECT_DOUBLE_EQ(r.rows[0].time_s, 0.0);
  EXPECT_DOUBLE_EQ(r.rows[1].time_s, 0.0);
  EXPECT_EQ(r.rows[2].reading.gpu, 0);  // sample 1 (GPU 1's N/A row dropped)
  EXPECT_DOUBLE_EQ(r.rows[2].time_s, 0.5);
  EXPECT_DOUBLE_EQ(r.rows[3].time_s, 1.0);
  EXPECT_EQ(r.rows[3].line, 9);
  EXPECT_EQ(r.rows[4].reading.gpu, 1);
  EXPECT_TRUE(std::isnan(r.rows[4].reading.energy_j));
  EXPECT_DOUBLE_EQ(r.rows[4].reading.power_w, 260.0);
  EXPECT_EQ(r.meta["format"], "dcgmi-dmon");
  EXPECT_EQ(r.meta["time_source"], "dmon period");
  EXPECT_DOUBLE_EQ(r.meta["dmon_period_s"].get<double>(), 0.5);
}

TEST(DmonImport, TimeColumnFromALineStampingWrapper) {
  const std::string log =
      "1753572729.000 #Entity POWER\n"
      "1753572729.000 ID\n"
      "1753572729.100 GPU 0 100\n"
      "1753572729.101 GPU 1 200\n"
      "1753572729.600 GPU 0 110\n"
      "1753572729.601 GPU 1 210\n";
  Read r = read("ts.txt", log, 0);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_DOUBLE_EQ(r.rows[0].time_s, 0.0);
  EXPECT_NEAR(r.rows[2].time_s, 0.5, 1e-6);
  EXPECT_EQ(r.meta["time_source"], "time column");
  // Both a time column and a period: refused.
  Read both = read("ts_both.txt", log, 0.5);
  EXPECT_NE(both.status.message().find("--dmon-period-s given but the log has a time column"),
            std::string::npos)
      << both.status.message();
  Read back = read("ts_back.txt", log + "1753572729.000 GPU 0 5\n", 0);
  EXPECT_NE(back.status.message().find("ts_back.txt:7: time: goes backwards"), std::string::npos)
      << back.status.message();
}

TEST(DmonImport, ErrorsNameFileLineAndField) {
  auto err = [](const std::string& name, const std::string& text, double period = 0.5) {
    Read r = read(name, text, period);
    EXPECT_FALSE(r.status.ok()) << name;
    EXPECT_EQ(r.status.exit_code(), 2) << name;
    return r.status.message();
  };
  EXPECT_NE(err("noperiod.txt", kLog, 0)
                .find("noperiod.txt:1: header: dcgmi dmon output has no "
                      "timestamps: give --dmon-period-s"),
            std::string::npos);
  EXPECT_NE(err("nopower.txt", "#Entity TOTEC\nGPU 0 5\n")
                .find("nopower.txt:1: header: dcgmi dmon output without a POWER column"),
            std::string::npos);
  EXPECT_NE(err("badpower.txt", "#Entity POWER\nGPU 0 12x\n")
                .find("badpower.txt:2: POWER: not a non-negative number of watts: '12x'"),
            std::string::npos);
  EXPECT_NE(err("negpower.txt", "#Entity POWER\nGPU 0 -1\n").find("negpower.txt:2: POWER"),
            std::string::npos);
  EXPECT_NE(err("nanpower.txt", "#Entity POWER\nGPU 0 nan\n").find("nanpower.txt:2: POWER"),
            std::string::npos);
  EXPECT_NE(
      err("badenergy.txt", "#Entity POWER TOTEC\nGPU 0 5 inf\n").find("badenergy.txt:2: TOTEC"),
      std::string::npos);
  EXPECT_NE(err("cols.txt", "#Entity POWER TOTEC\nGPU 0 5\n")
                .find("cols.txt:2: row: expected the entity and 2 values, got 3 columns"),
            std::string::npos);
  EXPECT_NE(err("mig.txt", "#Entity POWER\nGPU-I 3 5\n")
                .find("mig.txt:2: entity: 'GPU-I': only GPU rows are imported"),
            std::string::npos);
  EXPECT_NE(err("gpuid.txt", "#Entity POWER\nGPU 99999 5\n").find("gpuid.txt:2: gpu: not a GPU"),
            std::string::npos);
  EXPECT_NE(err("hdr2.txt", "#Entity POWER\nGPU 0 5\n#Entity TOTEC\n")
                .find("hdr2.txt:3: header: names other fields than the first header"),
            std::string::npos);
  EXPECT_NE(err("period.txt", kLog, -1).find("--dmon-period-s: must be in (0, 3600]"),
            std::string::npos);
  EXPECT_NE(err("bigpower.txt", "#Entity POWER\nGPU 0 12000\n")
                .find("bigpower.txt:2: POWER: 12000 W is outside 0..5000 W"),
            std::string::npos);
  EXPECT_NE(err("bigenergy.txt", "#Entity POWER TOTEC\nGPU 0 5 1e20\n")
                .find("bigenergy.txt:2: TOTEC: 1e+17 J is outside"),
            std::string::npos);
}

TEST(DmonImport, PartialLastLineDroppedWithAWarning) {
  Read r = read("partial.txt", "#Entity POWER\nID\nGPU 0 100\nGPU 0 10");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.rows.size(), 1u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("partial.txt:4: partial last line dropped"), std::string::npos);
}

}  // namespace
}  // namespace fw
