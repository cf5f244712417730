#include "telemetry/nvsmi_import.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "import_read.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw {
namespace {

using Read = testing::ImportRead;

Read read_nvsmi(const std::string& name, const std::string& text, TraceReaderOptions o = {}) {
  return testing::read_import("fw_nvsmi_" + name, text, o, TraceFormat::kNvidiaSmi);
}

TEST(NvsmiImport, Timestamp) {
  double t;
  ASSERT_TRUE(parse_nvsmi_timestamp("2025/07/26 23:32:09.123", t));
  // 2025-01-01T00:00:00Z = 1735689600; July 26 is 206 days later; 23:32:09 = 84729 s.
  EXPECT_NEAR(t, 1735689600.0 + 206 * 86400 + 84729 + 0.123, 1e-6);
  ASSERT_TRUE(parse_nvsmi_timestamp("2025-07-26 23:32:09", t));
  EXPECT_EQ(t, 1735689600.0 + 206 * 86400 + 84729);
  EXPECT_FALSE(parse_nvsmi_timestamp("26/07/2025 23:32:09", t));
  EXPECT_FALSE(parse_nvsmi_timestamp("2025/13/26 23:32:09", t));
  EXPECT_FALSE(parse_nvsmi_timestamp("2025/07/26 23:32:09.", t));
  EXPECT_FALSE(parse_nvsmi_timestamp("", t));
}

TEST(NvsmiImport, Cells) {
  double v;
  EXPECT_EQ(parse_nvsmi_cell("557.67 W", v), CellKind::kNumber);
  EXPECT_EQ(v, 557.67);
  EXPECT_EQ(parse_nvsmi_cell(" 45 %", v), CellKind::kNumber);
  EXPECT_EQ(v, 45);
  EXPECT_EQ(parse_nvsmi_cell("1410 MHz", v), CellKind::kNumber);
  EXPECT_EQ(parse_nvsmi_cell("1410", v), CellKind::kNumber);
  EXPECT_EQ(parse_nvsmi_cell("[N/A]", v), CellKind::kMissing);
  EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(parse_nvsmi_cell("[Not Supported]", v), CellKind::kMissing);
  EXPECT_EQ(parse_nvsmi_cell("N/A", v), CellKind::kMissing);
  EXPECT_EQ(parse_nvsmi_cell("12abc", v), CellKind::kBad);
  EXPECT_EQ(parse_nvsmi_cell("12 W 3", v), CellKind::kBad);
}

TEST(NvsmiImport, DetectsGpusPerLoop) {
  std::vector<double> steps;
  for (int loop = 0; loop < 50; ++loop) {
    for (int i = 0; i < 7; ++i) steps.push_back(0.001 * (i % 3));
    steps.push_back(0.095);
  }
  steps[8 * 10 + 1] = 0.7;  // one stalled query inside a loop
  EXPECT_EQ(detect_gpus_per_loop(steps), 8);
  EXPECT_EQ(detect_gpus_per_loop(std::vector<double>(100, 0.1)), 1);  // one GPU
}

TEST(NvsmiImport, WithIndexAndUnits) {
  Read r = read_nvsmi(
      "idx_units.csv",
      "timestamp, index, power.draw [W], utilization.gpu [%], clocks.sm [MHz], "
      "temperature.gpu, enforced.power.limit [W], memory.used [MiB]\n"
      "2025/07/26 23:32:09.703, 0, 557.67 W, 45 %, 1410 MHz, 61, 700.00 W, 17 MiB\n"
      "2025/07/26 23:32:09.704, 1, 560.00 W, [N/A], 1410 MHz, 60, 700.00 W, 17 MiB\n"
      "2025/07/26 23:32:09.803, 0, 551.00 W, 50 %, [Not Supported], 61, 700.00 W, 1 MiB\n"
      "2025/07/26 23:32:09.804, 1, 552.00 W, 51 %, 1400 MHz, 60, 700.00 W, 17 MiB\n");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].time_s, 0);
  EXPECT_NEAR(r.rows[3].time_s, 0.101, 1e-6);
  EXPECT_EQ(r.rows[1].reading.gpu, 1);
  EXPECT_EQ(r.rows[0].reading.power_w, 557.67);
  EXPECT_EQ(r.rows[0].reading.sm_util, 0.45);
  EXPECT_TRUE(std::isnan(r.rows[1].reading.sm_util));
  EXPECT_TRUE(std::isnan(r.rows[2].reading.sm_clock_mhz));
  EXPECT_EQ(r.rows[0].reading.sm_clock_mhz, 1410);
  EXPECT_EQ(r.rows[0].reading.temp_c, 61);
  EXPECT_EQ(r.rows[0].reading.cap_w, 700);
  EXPECT_EQ(r.rows[2].line, 4);
  EXPECT_EQ(r.meta["index_column"], true);
  EXPECT_EQ(r.meta["units_in_cells"], true);
  EXPECT_EQ(r.meta["start_timestamp"], "2025/07/26 23:32:09.703");
}

TEST(NvsmiImport, WithIndexNounits) {
  Read r =
      read_nvsmi("idx_nounits.csv",
                 "timestamp, index, power.draw [W], power.draw.instant [W], utilization.gpu [%]\n"
                 "2025/07/26 23:32:09.703, 0, 557.67, 601.5, 45\n"
                 "2025/07/26 23:32:09.703, 1, 300.25, 299.0, 5\n");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].reading.power_w, 300.25);
  EXPECT_EQ(r.rows[0].reading.power_instant_w, 601.5);
  EXPECT_EQ(r.rows[1].reading.sm_util, 0.05);
  EXPECT_EQ(r.meta["units_in_cells"], false);
}

// A log without an index column, shaped like a real one: each row its own timestamp, a few
// ms apart within a loop, loops 100 ms apart.
std::string no_index_log(int gpus, int loops, bool units, int first_loop = 0) {
  std::string s = "timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]\n";
  for (int k = first_loop; k < loops; ++k) {
    for (int g = 0; g < gpus; ++g) {
      char line[160];
      const int ms = 100 * k + g * (1 + (k % 2));
      std::snprintf(line, sizeof line, "2025/07/26 23:%02d:%02d.%03d, %d.50%s, %d%s, 17%s\n",
                    32 + ms / 60000, (ms / 1000) % 60, ms % 1000, 100 * g + k, units ? " W" : "", g,
                    units ? " %" : "", units ? " MiB" : "");
      s += line;
    }
  }
  return s;
}

TEST(NvsmiImport, WithoutIndexGpusNumberedByPositionInLoop) {
  for (bool units : {true, false}) {
    Read r = read_nvsmi(units ? "noidx_u.csv" : "noidx_n.csv", no_index_log(8, 20, units));
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    ASSERT_EQ(r.rows.size(), 160u);
    EXPECT_EQ(r.meta["gpus_per_tick"], 8);
    EXPECT_EQ(r.meta["gpus_per_tick_source"], "detected");
    EXPECT_EQ(r.meta["units_in_cells"], units);
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const int g = static_cast<int>(i % 8), k = static_cast<int>(i / 8);
      ASSERT_EQ(r.rows[i].reading.gpu, g) << i;
      ASSERT_EQ(r.rows[i].reading.power_w, 100 * g + k + 0.5) << i;
    }
  }
  TraceReaderOptions o;
  o.nvsmi_gpus_per_tick = 8;  // given and matching the data
  Read r = read_nvsmi("noidx_given.csv", no_index_log(8, 5, true), o);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.rows[5].reading.gpu, 5);
  EXPECT_EQ(r.meta["gpus_per_tick_source"], "given");
}

// Drops the first n data rows (a log trimmed at the top).
std::string trim_top(const std::string& log, int n) {
  size_t pos = log.find('\n') + 1;
  const std::string header = log.substr(0, pos);
  for (int i = 0; i < n; ++i) pos = log.find('\n', pos) + 1;
  return header + log.substr(pos);
}

TEST(NvsmiImport, TrimmedAtTheTopKeepsTheGpuNumbers) {
  for (auto [gpus, cut] : {std::pair{8, 1}, std::pair{4, 2}, std::pair{8, 7}}) {
    Read r = read_nvsmi("trim.csv", trim_top(no_index_log(gpus, 30, true), cut));
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_EQ(r.meta["gpus_per_tick"], gpus);
    EXPECT_EQ(r.meta["loop_phase_rows"], gpus - cut);
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const int g = static_cast<int>((i + cut) % gpus), k = static_cast<int>((i + cut) / gpus);
      ASSERT_EQ(r.rows[i].reading.gpu, g) << gpus << " " << cut << " " << i;
      ASSERT_EQ(r.rows[i].reading.power_w, 100 * g + k + 0.5) << i;
    }
  }
}

TEST(NvsmiImport, GpuThatStopsReportingIsRefusedNotMisassigned) {
  // 8 GPUs, then GPU 7 stops: later loops have 7 rows. Early (within the rows the cycle is
  // fitted on) and late (found by the whole-file check).
  for (int loops8 : {30, 600}) {
    std::string log = no_index_log(8, loops8, true);
    const std::string seven = no_index_log(7, loops8 + 40, true, loops8);
    log += seven.substr(seven.find('\n') + 1);
    Read r = read_nvsmi("stop.csv", log);
    ASSERT_FALSE(r.status.ok());
    EXPECT_NE(r.status.message().find(loops8 == 30 ? "GPUs cannot be told apart"
                                                   : "query-loop cycle changed"),
              std::string::npos)
        << r.status.message();
    EXPECT_NE(r.status.message().find("add the index column"), std::string::npos);
  }
}

TEST(NvsmiImport, GivenGpusPerLoopIsCheckedAgainstTheData) {
  for (int n : {4, 16}) {
    TraceReaderOptions o;
    o.nvsmi_gpus_per_tick = n;
    Read r = read_nvsmi("given_bad.csv", no_index_log(8, 30, true), o);
    ASSERT_FALSE(r.status.ok()) << n;
    EXPECT_NE(r.status.message().find("--nvsmi-gpus " + std::to_string(n)), std::string::npos)
        << r.status.message();
    EXPECT_NE(r.status.message().find("shows 8 rows per query loop"), std::string::npos)
        << r.status.message();
  }
  TraceReaderOptions o;
  o.nvsmi_gpus_per_tick = 5000;
  Read r = read_nvsmi("given_huge.csv", no_index_log(8, 30, true), o);
  EXPECT_NE(r.status.message().find("--nvsmi-gpus: must be"), std::string::npos)
      << r.status.message();
}

TEST(NvsmiImport, IrregularStepsWithoutIdAreRefused) {
  std::string log = "timestamp, power.draw [W]\n";
  const int ms[] = {0, 1, 50, 52, 53, 300, 301, 302, 303, 700, 900, 901, 1500, 1502, 2500, 2501};
  for (int t : ms) {
    char line[96];
    std::snprintf(line, sizeof line, "2025/07/26 23:32:%02d.%03d, 100 W\n", 10 + t / 1000,
                  t % 1000);
    log += line;
  }
  Read r = read_nvsmi("irregular.csv", log);
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("GPUs cannot be told apart"), std::string::npos)
      << r.status.message();
}

TEST(NvsmiImport, BusIdOrUuidIdentifiesGpus) {
  // Trimmed at the top (first row is the second GPU) and GPUs listed by bus id.
  const std::string log =
      "timestamp, pci.bus_id, power.draw [W]\n"
      "2025/07/26 23:32:09.700, 00000000:1B:00.0, 200 W\n"
      "2025/07/26 23:32:09.800, 00000000:07:00.0, 100 W\n"
      "2025/07/26 23:32:09.801, 00000000:1B:00.0, 201 W\n";
  Read r = read_nvsmi("busid.csv", log);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].reading.gpu, 1);
  EXPECT_EQ(r.rows[1].reading.gpu, 0);
  EXPECT_EQ(r.rows[2].reading.gpu, 1);
  EXPECT_EQ(r.meta["gpu_identification"], "pci.bus_id");
}

TEST(NvsmiImport, UnitsFromCellOrHeader) {
  const std::string hdr = "timestamp, index, power.draw [W]\n";
  Read r = read_nvsmi("kw.csv", hdr +
                                    "2025/07/26 23:32:09.703, 0, 0.3 kW\n"
                                    "2025/07/26 23:32:09.803, 0, 300000 mW\n");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_DOUBLE_EQ(r.rows[0].reading.power_w, 300);
  EXPECT_DOUBLE_EQ(r.rows[1].reading.power_w, 300);
  r = read_nvsmi("mw_hdr.csv",
                 "timestamp, index, power.draw [mW], energy [kJ]\n"
                 "2025/07/26 23:32:09.703, 0, 250000, 1.5\n");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_DOUBLE_EQ(r.rows[0].reading.power_w, 250);
  EXPECT_DOUBLE_EQ(r.rows[0].reading.energy_j, 1500);
  r = read_nvsmi("cut.csv", hdr +
                                "2025/07/26 23:32:09.703, 0, 315.5 W\n"
                                "2025/07/26 23:32:09.803, 0, 31\n"
                                "2025/07/26 23:32:09.903, 0, 315.5 W\n");
  EXPECT_NE(r.status.message().find("cut.csv:3: power.draw: cell missing its unit"),
            std::string::npos)
      << r.status.message();
  r = read_nvsmi("wrong_unit.csv", hdr + "2025/07/26 23:32:09.703, 0, 300 MHz\n");
  EXPECT_NE(r.status.message().find("wrong_unit.csv:2: power.draw: unit 'MHz' is not W"),
            std::string::npos)
      << r.status.message();
  r = read_nvsmi("bad_hdr_unit.csv", "timestamp, index, power.draw [V]\n");
  EXPECT_NE(r.status.message().find("header unit [V]"), std::string::npos) << r.status.message();
}

TEST(NvsmiImport, ValuesNoGpuHasAreRefused) {
  const std::string hdr = "timestamp, index, power.draw [W], utilization.gpu [%]\n";
  Read r = read_nvsmi("node_total.csv", hdr + "2025/07/26 23:32:09.703, 0, 5600 W, 50 %\n");
  EXPECT_NE(r.status.message().find("node_total.csv:2: power.draw: 5600 W is outside 0..5000 W"),
            std::string::npos)
      << r.status.message();
  r = read_nvsmi("kw_as_w.csv", hdr + "2025/07/26 23:32:09.703, 0, 300 kW, 50 %\n");
  EXPECT_NE(r.status.message().find("kw_as_w.csv:2: power.draw: 300000 W is outside"),
            std::string::npos)
      << r.status.message();
  r = read_nvsmi("util.csv", hdr + "2025/07/26 23:32:09.703, 0, 300 W, 250 %\n");
  EXPECT_NE(r.status.message().find("util.csv:2: utilization.gpu: 2.5 is outside 0..1"),
            std::string::npos)
      << r.status.message();
  r = read_nvsmi("ok.csv", hdr + "2025/07/26 23:32:09.703, 0, 4999 W, 100 %\n");
  EXPECT_TRUE(r.status.ok()) << r.status.message();
}

TEST(NvsmiImport, LogsAsTheyAreBomCrlfPartialLineRepeatedHeader) {
  const std::string hdr = "timestamp, index, power.draw [W]";
  const std::string rows =
      "2025/07/26 23:32:09.703, 0, 100 W\r\n2025/07/26 23:32:09.803, 0, 101 W\r\n";
  Read r = read_nvsmi("bom.csv", "\xEF\xBB\xBF" + hdr + "\r\n" + rows + hdr + "\r\n" + rows +
                                     "2025/07/26 23:32:10.003, 0, 31");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[3].reading.power_w, 101);
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[0].find("bom.csv:4: repeated header line skipped"), std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.warnings[1].find("bom.csv:7: partial last line dropped"), std::string::npos)
      << r.warnings[1];
}

TEST(NvsmiImport, TimestampsOutsideTheSaneRangeAreRejected) {
  double t;
  EXPECT_FALSE(parse_nvsmi_timestamp("9999/07/26 23:32:09", t));
  EXPECT_FALSE(parse_nvsmi_timestamp("1900/07/26 23:32:09", t));
  EXPECT_FALSE(parse_nvsmi_timestamp("2025/07/26 23:32:09.12345678901234567890", t));
}

TEST(NvsmiImport, MissingPowerIsAGapNotAnError) {
  std::string log = no_index_log(2, 10, true);
  // Row 5 (loop 2, GPU 0): power [N/A].
  size_t pos = 0;
  for (int i = 0; i < 5; ++i) pos = log.find('\n', pos) + 1;
  const size_t comma = log.find(',', pos);
  const size_t comma2 = log.find(',', comma + 1);
  log.replace(comma + 2, comma2 - comma - 2, "[N/A]");
  Read r = read_nvsmi("na_power.csv", log);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.missing, 1);
  EXPECT_EQ(r.rows.size(), 19u);
  EXPECT_EQ(r.rows[4].reading.gpu, 1);  // numbering still follows positions
}

TEST(NvsmiImport, BadInputNamesFileAndLine) {
  const std::string hdr = "timestamp, index, power.draw [W]\n";
  Read r = read_nvsmi("bad_ts.csv", hdr + "2025/07/26 23:32:09.703, 0, 5 W\nyesterday, 0, 5 W\n");
  EXPECT_NE(r.status.message().find("bad_ts.csv:3: timestamp"), std::string::npos)
      << r.status.message();
  r = read_nvsmi("bad_p.csv", hdr + "2025/07/26 23:32:09.703, 0, lots W\n");
  EXPECT_NE(r.status.message().find("bad_p.csv:2: power.draw: not a number"), std::string::npos)
      << r.status.message();
  r = read_nvsmi("neg_p.csv", hdr + "2025/07/26 23:32:09.703, 0, -5 W\n");
  EXPECT_NE(r.status.message().find("neg_p.csv:2: power.draw: negative"), std::string::npos);
  r = read_nvsmi("bad_idx.csv", hdr + "2025/07/26 23:32:09.703, x, 5 W\n");
  EXPECT_NE(r.status.message().find("bad_idx.csv:2: index"), std::string::npos);
  TraceReaderOptions o;
  o.gpus = {0};
  r = read_nvsmi("unk_idx.csv",
                 hdr + "2025/07/26 23:32:09.703, 0, 5 W\n2025/07/26 23:32:09.703, 3, 5 W\n", o);
  EXPECT_NE(r.status.message().find("unk_idx.csv:3: index: unknown GPU index 3"), std::string::npos)
      << r.status.message();
}

}  // namespace
}  // namespace fw
