#include "telemetry/trace_reader.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/rng.hpp"
#include "telemetry/trace_reader_parse.hpp"
#include "telemetry/trace_writer.hpp"

namespace fw {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("fw_reader_" + name);
  fs::remove_all(p);
  return p;
}

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path p = temp_path(name);
  std::ofstream(p) << text;
  return p;
}

// Reads every row; returns the final status (rows appended to out).
Status read_all(const std::string& path, std::vector<TraceRow>& out,
                const TraceReaderOptions& o = {}) {
  auto r = TraceReader::open(path, o);
  if (!r.ok()) return r.status();
  TraceRow row;
  while ((*r)->next(row)) out.push_back(row);
  return (*r)->status();
}

std::string error_of(const std::string& name, const std::string& text,
                     const TraceReaderOptions& o = {}) {
  std::vector<TraceRow> rows;
  Status s = read_all(write_file(name, text).string(), rows, o);
  EXPECT_FALSE(s.ok()) << name;
  EXPECT_EQ(s.exit_code(), 2) << name;
  return s.message();
}

TEST(TraceReader, ReadsWhatTheWriterWrote) {
  const fs::path dir = temp_path("dir");
  {
    auto w = TraceWriter::create(dir.string());
    ASSERT_TRUE(w.ok());
    for (int k = 0; k < 3; ++k) {
      Snapshot s;
      s.time_s = 0.5 * k;
      for (int g = 0; g < 2; ++g) {
        GpuReading r;
        r.gpu = g;
        r.power_w = 300 + 10 * g + k;
        r.energy_j = 100.0 * k;
        r.sm_util = 0.5;
        s.gpus.push_back(r);
      }
      JobReading j;
      j.tokens_total = 1000.0 * k;
      s.jobs.push_back(j);
      (*w)->append(s);
    }
    ASSERT_TRUE((*w)->close({{"gpus", {0, 1}}}).ok());
  }
  auto r = TraceReader::open(dir.string());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->format(), TraceFormat::kFlexwattDir);
  EXPECT_FALSE((*r)->jobs_path().empty());
  EXPECT_EQ((*r)->meta()["format"], "flexwatt-trace/1");
  std::vector<TraceRow> rows;
  TraceRow row;
  while ((*r)->next(row)) rows.push_back(row);
  ASSERT_TRUE((*r)->status().ok()) << (*r)->status().message();
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[3].time_s, 0.5);
  EXPECT_EQ(rows[3].reading.gpu, 1);
  EXPECT_EQ(rows[3].reading.power_w, 311);
  EXPECT_EQ(rows[3].reading.energy_j, 100);
  EXPECT_EQ(rows[3].reading.sm_util, 0.5);
  EXPECT_TRUE(std::isnan(rows[3].reading.temp_c));  // empty cell
  EXPECT_EQ(rows[3].line, 5);
  auto tokens = read_job_tokens((*r)->jobs_path());
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->value(), 2000);
}

TEST(TraceReader, ColumnsByNameExtraColumnsAllowed) {
  std::vector<TraceRow> rows;
  const fs::path p = write_file("cols.csv", "note,power_w,gpu,time_s,temp_c\nx,250.5,3,1.25,61\n");
  ASSERT_TRUE(read_all(p.string(), rows).ok());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].time_s, 1.25);
  EXPECT_EQ(rows[0].reading.gpu, 3);
  EXPECT_EQ(rows[0].reading.power_w, 250.5);
  EXPECT_EQ(rows[0].reading.temp_c, 61);
  EXPECT_TRUE(std::isnan(rows[0].reading.energy_j));  // no column
}

TEST(TraceReader, FieldMaskSkipsColumnsNotAsked) {
  std::vector<TraceRow> rows;
  const fs::path p = write_file("mask.csv", "time_s,gpu,power_w,energy_j,temp_c\n0,0,1,2,3\n");
  TraceReaderOptions o;
  o.fields = kFieldEnergy;
  ASSERT_TRUE(read_all(p.string(), rows, o).ok());
  EXPECT_EQ(rows[0].reading.energy_j, 2);
  EXPECT_TRUE(std::isnan(rows[0].reading.temp_c));
}

TEST(TraceReader, EmptyFile) {
  EXPECT_NE(error_of("empty.csv", "").find("empty.csv:1: empty file"), std::string::npos);
  EXPECT_NE(error_of("blank.csv", "\n\n").find("empty file"), std::string::npos);
}

TEST(TraceReader, WrongHeader) {
  const std::string m = error_of("hdr.csv", "time_s,gpu_index,watts\n0,0,100\n");
  EXPECT_NE(m.find("hdr.csv:1: header: not a flexwatt trace (missing gpu, power_w)"),
            std::string::npos)
      << m;
  // A headerless file is a wrong header too.
  EXPECT_NE(error_of("nohdr.csv", "0,0,100\n").find("nohdr.csv:1: header"), std::string::npos);
}

TEST(TraceReader, NonNumericCells) {
  EXPECT_NE(error_of("nn1.csv", "time_s,gpu,power_w\n0,0,100\n0.5,0,abc\n")
                .find("nn1.csv:3: power_w: not a number: 'abc'"),
            std::string::npos);
  EXPECT_NE(error_of("nn2.csv", "time_s,gpu,power_w\nzero,0,100\n").find("nn2.csv:2: time_s"),
            std::string::npos);
  EXPECT_NE(error_of("nn3.csv", "time_s,gpu,power_w\n0,0.5,100\n").find("nn3.csv:2: gpu"),
            std::string::npos);
  EXPECT_NE(error_of("nn4.csv", "time_s,gpu,power_w,energy_j\n0,0,100,x\n")
                .find("nn4.csv:2: energy_j: not a number"),
            std::string::npos);
  EXPECT_NE(error_of("nn5.csv", "time_s,gpu,power_w\n0,0\n").find("nn5.csv:2: row: expected"),
            std::string::npos);
}

TEST(TraceReader, NegativeNanInfinitePower) {
  EXPECT_NE(error_of("neg.csv", "time_s,gpu,power_w\n0,0,100\n0.5,0,-3.5\n")
                .find("neg.csv:3: power_w: negative (-3.5)"),
            std::string::npos);
  EXPECT_NE(error_of("nan.csv", "time_s,gpu,power_w\n0,0,nan\n").find("nan.csv:2: power_w: NaN"),
            std::string::npos);
  EXPECT_NE(error_of("inf2.csv", "time_s,gpu,power_w\n0,0,inf\n").find("power_w: infinite"),
            std::string::npos);
  EXPECT_NE(error_of("nant.csv", "time_s,gpu,power_w\nnan,0,1\n").find("nant.csv:2: time_s"),
            std::string::npos);
}

TEST(TraceReader, UnknownGpuIndex) {
  TraceReaderOptions o;
  o.gpus = {0, 1};
  EXPECT_NE(error_of("unk.csv", "time_s,gpu,power_w\n0,0,1\n0,1,1\n0,5,1\n", o)
                .find("unk.csv:4: gpu: unknown GPU index 5 (known: 0,1)"),
            std::string::npos);
  EXPECT_NE(error_of("negg.csv", "time_s,gpu,power_w\n0,-1,1\n").find("negg.csv:2: gpu"),
            std::string::npos);
}

TEST(TraceReader, MissingPathIsNotFound) {
  auto r = TraceReader::open("/nonexistent/fw/trace");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  const fs::path dir = temp_path("nogpus");
  fs::create_directories(dir);
  r = TraceReader::open(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gpus.csv"), std::string::npos);
}

TEST(TraceReader, BadMetaJson) {
  const fs::path dir = temp_path("badmeta");
  fs::create_directories(dir);
  std::ofstream(dir / "gpus.csv") << "time_s,gpu,power_w\n0,0,1\n";
  std::ofstream(dir / "meta.json") << "{\"gpus\": 3}";
  auto r = TraceReader::open(dir.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("meta.json: gpus: expected an array"), std::string::npos);
  // An index a 32-bit read would narrow to GPU 0 is out of range, not GPU 0.
  std::ofstream(dir / "meta.json", std::ios::trunc) << "{\"gpus\": [{\"index\": 4294967296}]}";
  auto narrowed = TraceReader::open(dir.string());
  ASSERT_FALSE(narrowed.ok());
  EXPECT_NE(narrowed.status().message().find("gpus: index 4294967296 out of range"),
            std::string::npos)
      << narrowed.status().message();
}

TEST(TraceReader, JobTokensErrors) {
  auto t =
      read_job_tokens(write_file("jobs1.csv", "time_s,job,tokens_total\n0,0,5\n1,0,3\n").string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("jobs1.csv:3: tokens_total: decreases"), std::string::npos);
  t = read_job_tokens(write_file("jobs2.csv", "time_s,job,tokens_total\n0,0,many\n").string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("jobs2.csv:2: tokens_total"), std::string::npos);
  t = read_job_tokens(write_file("jobs3.csv", "time_s,job,phase\n0,0,idle\n").string());
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->has_value());  // no tokens column: no tokens, not an error
}

TEST(TraceReader, FastParseMatchesParseDouble) {
  Rng rng(42);
  char buf[64];
  for (int i = 0; i < 20000; ++i) {
    const double v = (rng.uniform() - 0.2) * std::pow(10.0, static_cast<int>(rng.uniform() * 8));
    const int decimals = static_cast<int>(rng.uniform() * 7);
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    double a = 0, b = 0;
    ASSERT_TRUE(trace_internal::fast_parse_double(buf, a)) << buf;
    ASSERT_TRUE(parse_double(buf, b)) << buf;
    ASSERT_EQ(a, b) << buf;
  }
  double x;
  EXPECT_TRUE(trace_internal::fast_parse_double("1e3", x));
  EXPECT_EQ(x, 1000);
  EXPECT_TRUE(trace_internal::fast_parse_double("12345678901234567.5", x));  // long: fallback
  EXPECT_FALSE(trace_internal::fast_parse_double("", x));
  EXPECT_FALSE(trace_internal::fast_parse_double("-", x));
  EXPECT_FALSE(trace_internal::fast_parse_double("1.2.3", x));
  EXPECT_FALSE(trace_internal::fast_parse_double("12 W", x));
}

TEST(TraceReader, TimesBeyondTheSaneRangeAreRejected) {
  // One timestamp of 1e20, or two Unix timestamps run together, used to hang the analysis.
  for (const char* t : {"1e20", "17000000001700000001", "-2e10"}) {
    const std::string m =
        error_of("huge_t.csv", std::string("time_s,gpu,power_w\n0,0,1\n") + t + ",0,1\n");
    EXPECT_NE(m.find("huge_t.csv:3: time_s:"), std::string::npos) << m;
    EXPECT_NE(m.find("sane range"), std::string::npos) << m;
  }
}

TEST(TraceReader, LogsAsTheyAreBomCrlfPartialLineRepeatedHeader) {
  const std::string text =
      "\xEF\xBB\xBFtime_s,gpu,power_w\r\n0,0,100\r\n0.5,0,101\r\ntime_s,gpu,power_w\r\n"
      "1,0,102\r\n1.5,0,31";
  auto r = TraceReader::open(write_file("asis.csv", text).string());
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<TraceRow> rows;
  TraceRow row;
  while ((*r)->next(row)) rows.push_back(row);
  ASSERT_TRUE((*r)->status().ok()) << (*r)->status().message();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].reading.power_w, 102);
  ASSERT_EQ((*r)->warnings().size(), 2u);
  EXPECT_NE((*r)->warnings()[0].find("asis.csv:4: repeated header line skipped"),
            std::string::npos);
  EXPECT_NE((*r)->warnings()[1].find("asis.csv:6: partial last line dropped"), std::string::npos);
  EXPECT_EQ((*r)->warning_count(), 2);
}

// Reads path with the given options; rows, warnings and the final status into a string that
// compares values bit for bit (NaN included).
std::string transcript(const std::string& path, TraceReaderOptions o) {
  auto r = TraceReader::open(path, o);
  if (!r.ok()) return "open: " + r.status().message();
  std::string out;
  TraceRow row;
  auto bits = [](double v) {
    uint64_t u;
    std::memcpy(&u, &v, sizeof u);
    return std::to_string(u);
  };
  while ((*r)->next(row)) {
    const GpuReading& g = row.reading;
    out += std::to_string(row.line) + " " + bits(row.time_s) + " " + std::to_string(g.gpu) + " " +
           bits(g.power_w) + " " + bits(g.power_instant_w) + " " + bits(g.energy_j) + " " +
           bits(g.cap_w) + " " + bits(g.sm_util) + " " + bits(g.mem_util) + " " +
           bits(g.sm_clock_mhz) + " " + bits(g.temp_c) + "\n";
  }
  for (const std::string& w : (*r)->warnings()) out += "warning " + w + "\n";
  return out + "status " + (*r)->status().message();
}

// The columns next_batch hands out (line, time, GPU, power, energy), rows read by next_batch
// (batch true) or by next(), with the warnings and the final status.
std::string batch_transcript(const std::string& path, TraceReaderOptions o, bool batch) {
  auto r = TraceReader::open(path, o);
  if (!r.ok()) return "open: " + r.status().message();
  std::string out;
  auto add = [&](int64_t line, double t, int gpu, double p, double e) {
    uint64_t u[3];
    std::memcpy(&u[0], &t, 8);
    std::memcpy(&u[1], &p, 8);
    std::memcpy(&u[2], &e, 8);
    out += std::to_string(line) + " " + std::to_string(u[0]) + " " + std::to_string(gpu) + " " +
           std::to_string(u[1]) + " " + std::to_string(u[2]) + "\n";
  };
  if (batch) {
    TraceRowBatch b;
    while ((*r)->next_batch(b)) {
      EXPECT_GT(b.n, 0u);
      for (size_t i = 0; i < b.n; ++i) {
        add(b.line_base + b.line[i], b.time_s[i], b.gpu[i], b.power_w[i],
            b.energy_j != nullptr ? b.energy_j[i] : kUnset);
      }
    }
  } else {
    TraceRow row;
    while ((*r)->next(row)) {
      add(row.line, row.time_s, row.reading.gpu, row.reading.power_w, row.reading.energy_j);
    }
  }
  for (const std::string& w : (*r)->warnings()) out += "warning " + w + "\n";
  return out + "status " + (*r)->status().message();
}

TEST(TraceReader, InPlaceParseMatchesTheReferencePathLineForLine) {
  const std::string head = "time_s,gpu,power_w,energy_j,temp_c,extra\n";
  const std::string body =
      "0.000,0,290.84,29.084,55.0,x\n"
      "0.000,1,277.56,,55.0,\"q\"\n"  // empty optional cell
      "0.100,0,300,30,56\n"           // fewer columns than the header, enough for the parsed ones
      "0.100,1,+301.5,31,56,y\n"      // explicit '+'
      "0.200,0,3.5e2,1e1,57,y\n"      // exponents
      "0.200,1,1234.5678901234567,1,57,y\n"  // more than 15 digits
      "\n"
      "   \t \n"                                    // blank lines
      "0.300, 0 ,300.25 ,\"40\",58,y\n"             // spaces and quotes
      "0.300,1,-0,41,58,y\r\n"                      // CRLF, negative zero
      "time_s,gpu,power_w,energy_j,temp_c,extra\n"  // a repeated header
      "0.4,0000,300.,.5,-0.0,z\n"                   // leading zeros, bare '.' forms
      "0.4,1,300,50,nan,z\n"
      "0.5,0,00000000000000001,1,1,1\r\n"
      "0.5,1,300,51,1,1";  // the unterminated last line
  const std::vector<std::string> tails = {
      "",
      "\n0.6,0,abc,1,1,1\n",    // non-numeric power
      "\n0.6,0,-5,1,1,1\n",     // negative power
      "\n0.6,0,inf,1,1,1\n",    // infinite power
      "\n0.6,99999,5,1,1,1\n",  // GPU out of range
      "\n0.6,-1,5,1,1,1\n",
      "\n1e11,0,5,1,1,1\n",  // time beyond the sane range
      "\nnan,0,5,1,1,1\n",
      "\n0.6,0\n",               // too few fields
      "\n0.6,0,5,zz,1,1\n",      // bad optional cell
      "\n0.6,0,5000.5,1,1,1\n",  // power beyond any GPU
      "\n0.6,0,5,-1,1,1\n",      // negative energy counter
      "\n0.6,0,5,1e16,1,1\n",    // energy beyond the sane range
      "\n0.6,0,5,1,1000.5,1\n",  // temperature beyond the sane range
  };
  for (size_t i = 0; i < tails.size(); ++i) {
    const std::string path = write_file("inplace.csv", head + body + tails[i]).string();
    for (unsigned fields : {unsigned{kFieldAll}, unsigned{kFieldEnergy}}) {
      TraceReaderOptions ref;
      ref.in_place = false;
      ref.parse_threads = 1;
      ref.fields = fields;
      const std::string want = transcript(path, ref);
      TraceReaderOptions one = ref;
      one.in_place = true;
      EXPECT_EQ(transcript(path, one), want) << "tail " << i;
      const std::string want_batch = batch_transcript(path, ref, false);
      EXPECT_EQ(batch_transcript(path, ref, true), want_batch) << "tail " << i;
      EXPECT_EQ(batch_transcript(path, one, true), want_batch) << "tail " << i;
      TraceReaderOptions two = one;
      two.parse_threads = 2;
      two.parallel_min_bytes = 1;
      for (size_t block : {size_t{1}, size_t{13}, size_t{64}, size_t{200}}) {
        two.parallel_block_bytes = block;
        EXPECT_EQ(transcript(path, two), want) << "tail " << i << " block " << block;
        EXPECT_EQ(batch_transcript(path, two, true), want_batch)
            << "tail " << i << " block " << block;
      }
      if (tails[i].find("5000.5") != std::string::npos) {
        EXPECT_NE(want.find(":17: power_w: 5000.5 W is outside 0..5000 W"), std::string::npos)
            << want;
      }
      if (tails[i].find("1e16") != std::string::npos) {
        EXPECT_NE(want.find(":17: energy_j: 1e+16 J is outside"), std::string::npos) << want;
      }
      if (i == 0) {
        EXPECT_NE(want.find("partial last line"), std::string::npos) << want;
        EXPECT_NE(want.find("repeated header"), std::string::npos) << want;
      }
    }
  }
  // One GPU listed in meta.json: another index is an error on both paths.
  TraceReaderOptions known;
  known.gpus = {0};
  const std::string path = write_file("inplace_known.csv", head + body).string();
  TraceReaderOptions known_ref = known;
  known_ref.in_place = false;
  const std::string want = transcript(path, known_ref);
  EXPECT_NE(want.find("unknown GPU index 1"), std::string::npos) << want;
  EXPECT_EQ(transcript(path, known), want);
}

TEST(TraceReader, EmptyTimeCellIsAnErrorEvenOnTheFirstRow) {
  // Regression (found by fuzz_trace_reader): the tick's time cache matched an empty cell
  // before any time was cached, reading it as time 0.
  for (int threads : {1, 2}) {
    TraceReaderOptions o;
    o.parse_threads = threads;
    o.parallel_min_bytes = 1;
    o.parallel_block_bytes = 7;  // a block starts at the empty cell
    for (bool in_place : {true, false}) {
      o.in_place = in_place;
      EXPECT_NE(error_of("empty_time.csv", "time_s,gpu,power_w\n,0,5\n1,0,6\n", o)
                    .find("empty_time.csv:2: time_s: not a finite number: ''"),
                std::string::npos);
      EXPECT_NE(error_of("empty_time2.csv", "time_s,gpu,power_w\n1,0,5\n,0,6\n", o)
                    .find("empty_time2.csv:3: time_s: not a finite number: ''"),
                std::string::npos);
    }
  }
}

TEST(TraceReader, ParseThreadsAutomaticOnlyForLargeFiles) {
  // A small file with parse_threads 0 (automatic) reads with one thread: same transcript as 1.
  const std::string path =
      write_file("auto.csv", "time_s,gpu,power_w\n0,0,1\n0,1,2\n1,0,3\n").string();
  TraceReaderOptions automatic, one;
  one.parse_threads = 1;
  EXPECT_EQ(transcript(path, automatic), transcript(path, one));
}

TEST(TraceReader, ParallelParseGivesTheSameRowsErrorsAndWarnings) {
  std::string text = "time_s,gpu,power_w,energy_j\n";
  for (int k = 0; k < 300; ++k) {
    for (int g = 0; g < 3; ++g) {
      text += std::to_string(0.1 * k) + "," + std::to_string(g) + "," + std::to_string(100 + k) +
              "," + std::to_string(10 * k) + "\n";
    }
    if (k == 150) text += "time_s,gpu,power_w,energy_j\n";  // a repeated header
  }
  auto read = [](const std::string& path, bool parallel, std::vector<TraceRow>& rows,
                 std::vector<std::string>& warnings) {
    TraceReaderOptions o;
    o.parse_threads = parallel ? 2 : 1;
    o.parallel_min_bytes = 1;
    o.parallel_block_bytes = 97;  // many blocks, boundaries anywhere in a line
    auto r = TraceReader::open(path, o);
    if (!r.ok()) return r.status();
    TraceRow row;
    while ((*r)->next(row)) rows.push_back(row);
    warnings = (*r)->warnings();
    return (*r)->status();
  };
  for (const std::string& tail :
       {std::string(""), std::string("30.5,0,x\n1,2,3,4\n"), std::string("31,0,5,6")}) {
    const std::string path = write_file("par.csv", text + tail).string();
    std::vector<TraceRow> a, b;
    std::vector<std::string> wa, wb;
    const Status sa = read(path, false, a, wa), sb = read(path, true, b, wb);
    EXPECT_EQ(sa.ok(), sb.ok());
    EXPECT_EQ(sa.message(), sb.message());
    EXPECT_EQ(wa, wb);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].line, b[i].line) << i;
      ASSERT_EQ(a[i].time_s, b[i].time_s) << i;
      ASSERT_EQ(a[i].reading.gpu, b[i].reading.gpu) << i;
      ASSERT_EQ(a[i].reading.power_w, b[i].reading.power_w) << i;
      ASSERT_EQ(a[i].reading.energy_j, b[i].reading.energy_j) << i;
    }
    if (!tail.empty() && tail[0] == '3' && tail[3] == '5') {
      EXPECT_NE(sb.message().find("par.csv:903: row"), std::string::npos) << sb.message();
    }
  }
}

}  // namespace
}  // namespace fw
