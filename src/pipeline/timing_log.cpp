#include "pipeline/timing_log.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fw::pipeline {
namespace {

using nlohmann::json;

Status bad(const std::string& where, const std::string& field, const std::string& why) {
  return Status::InvalidArgument(where + ": " + field + ": " + why);
}

// An integer field (JSON integer, or a float with no fraction).
Status get_int(const json& j, const char* key, const std::string& where, int64_t lo, int64_t hi,
               int64_t& out) {
  auto it = j.find(key);
  if (it == j.end()) return bad(where, key, "missing");
  if (it->is_number_integer()) {
    out = it->get<int64_t>();
  } else if (it->is_number_float() && std::isfinite(it->get<double>()) &&
             std::floor(it->get<double>()) == it->get<double>() &&
             std::abs(it->get<double>()) < 9e18) {
    out = static_cast<int64_t>(it->get<double>());
  } else {
    return bad(where, key, "not an integer");
  }
  if (out < lo || out > hi) {
    return bad(
        where, key,
        std::to_string(out) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return Status::Ok();
}

struct Anchor {
  double unix_s = 0;
  int64_t mono_ns = 0;
};

}  // namespace

Result<RankTimings> read_rank_timings(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(path + ": cannot open");
  RankTimings r;
  r.source = path;
  std::string line;
  int64_t line_no = 0;
  bool have_anchor = false;
  Anchor a;
  constexpr int64_t kMax = INT64_C(4000000000000000000);
  while (std::getline(in, line)) {
    ++line_no;
    const std::string where = path + ":" + std::to_string(line_no);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad(where, "line", "not a JSON object");
    auto t = j.find("type");
    if (t == j.end() || !t->is_string()) return bad(where, "type", "missing");
    const std::string type = t->get<std::string>();
    if (type == "anchor") {
      auto f = j.find("format");
      if (f == j.end() || !f->is_string() || f->get<std::string>() != kTimingsFormat) {
        return bad(where, "format", std::string("want \"") + kTimingsFormat + "\"");
      }
      auto u = j.find("unix_s");
      if (u == j.end() || !u->is_number() || !std::isfinite(u->get<double>()) ||
          u->get<double>() < 0) {
        return bad(where, "unix_s", "not a time (seconds since 1970)");
      }
      int64_t mono = 0, stage = 0, stages = 0, pipe = 0, gpu = 0;
      FW_RETURN_IF_ERROR(get_int(j, "mono_ns", where, -kMax, kMax, mono));
      FW_RETURN_IF_ERROR(get_int(j, "stages", where, 1, 1024, stages));
      FW_RETURN_IF_ERROR(get_int(j, "stage", where, 0, stages - 1, stage));
      FW_RETURN_IF_ERROR(get_int(j, "pipeline", where, 0, 1 << 20, pipe));
      FW_RETURN_IF_ERROR(get_int(j, "gpu", where, 0, 1 << 20, gpu));
      if (have_anchor &&
          (stage != r.stage || stages != r.stages || pipe != r.pipeline || gpu != r.gpu)) {
        return bad(where, "anchor",
                   "stage, stages, pipeline and gpu must not change within a file (line " +
                       std::to_string(line_no) + " names another rank)");
      }
      r.stage = static_cast<int>(stage);
      r.stages = static_cast<int>(stages);
      r.pipeline = static_cast<int>(pipe);
      r.gpu = static_cast<int>(gpu);
      a = {u->get<double>(), mono};
      have_anchor = true;
      continue;
    }
    if (!have_anchor) return bad(where, "type", "the first record must be an anchor");
    if (type != "op" && type != "step") {
      return bad(where, "type", "'" + type + "' is not anchor, op or step");
    }
    int64_t t0 = 0, t1 = 0, step = 0;
    FW_RETURN_IF_ERROR(get_int(j, "start_ns", where, -kMax, kMax, t0));
    FW_RETURN_IF_ERROR(get_int(j, "end_ns", where, -kMax, kMax, t1));
    FW_RETURN_IF_ERROR(get_int(j, "step", where, 0, kMax, step));
    if (t1 < t0) return bad(where, "end_ns", "before start_ns");
    const double s0 = a.unix_s + static_cast<double>(t0 - a.mono_ns) * 1e-9;
    const double s1 = a.unix_s + static_cast<double>(t1 - a.mono_ns) * 1e-9;
    if (type == "step") {
      r.steps.push_back({step, s0, s1});
      continue;
    }
    auto ins = j.find("instr");
    OpTiming op;
    if (ins != j.end() && ins->is_string() && ins->get<std::string>() == "forward") {
      op.instr = Instr::kForward;
    } else if (ins != j.end() && ins->is_string() && ins->get<std::string>() == "backward") {
      op.instr = Instr::kBackward;
    } else {
      return bad(where, "instr", "not \"forward\" or \"backward\"");
    }
    int64_t mb = 0;
    FW_RETURN_IF_ERROR(get_int(j, "mb", where, 0, 1 << 30, mb));
    op.microbatch = static_cast<int>(mb);
    op.step = step;
    op.start_unix_s = s0;
    op.end_unix_s = s1;
    r.ops.push_back(op);
  }
  if (!have_anchor) return Status::InvalidArgument(path + ": no records (want an anchor first)");
  return r;
}

Result<std::vector<RankTimings>> read_timings(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::directory_iterator(p, ec)) {
        if (e.path().extension() == ".jsonl") found.push_back(e.path().string());
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) return Status::InvalidArgument(p + ": no *.jsonl timing files");
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(p);
    }
  }
  if (files.empty()) return Status::InvalidArgument("no timing files given");
  std::vector<RankTimings> out;
  for (const auto& f : files) {
    FW_ASSIGN_OR_RETURN(auto r, read_rank_timings(f));
    if (!out.empty() && r.stages != out.front().stages) {
      return Status::InvalidArgument(f + ":1: stages: " + std::to_string(r.stages) + " but " +
                                     out.front().source + " says " +
                                     std::to_string(out.front().stages));
    }
    out.push_back(std::move(r));
  }
  return out;
}

Status write_rank_timings(const std::string& path, const RankTimings& r, double anchor_unix_s) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Status::InvalidArgument(path + ": cannot write");
  json a = {
      {"type", "anchor"}, {"format", kTimingsFormat}, {"unix_s", anchor_unix_s}, {"mono_ns", 0},
      {"stage", r.stage}, {"stages", r.stages},       {"pipeline", r.pipeline},  {"gpu", r.gpu},
      {"rank", r.stage}};
  out << a.dump() << "\n";
  auto ns = [&](double t) { return static_cast<int64_t>(std::llround((t - anchor_unix_s) * 1e9)); };
  for (const auto& op : r.ops) {
    out << "{\"type\":\"op\",\"instr\":\"" << (op.instr == Instr::kForward ? "forward" : "backward")
        << "\",\"mb\":" << op.microbatch << ",\"step\":" << op.step
        << ",\"start_ns\":" << ns(op.start_unix_s) << ",\"end_ns\":" << ns(op.end_unix_s) << "}\n";
  }
  for (const auto& s : r.steps) {
    out << "{\"type\":\"step\",\"step\":" << s.step << ",\"start_ns\":" << ns(s.start_unix_s)
        << ",\"end_ns\":" << ns(s.end_unix_s) << "}\n";
  }
  out.flush();
  if (!out) return Status::InvalidArgument(path + ": write failed");
  return Status::Ok();
}

}  // namespace fw::pipeline
