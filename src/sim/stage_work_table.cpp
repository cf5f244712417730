#include "sim/stage_work_table.hpp"

#include <cmath>
#include <map>

#include "core/csv.hpp"
#include "core/csv_quoted.hpp"

namespace fw::sim {

Result<std::vector<StageWorkEntry>> read_stage_work_csv(const std::string& path) {
  auto reader = CsvReader::open(path);
  if (!reader.ok()) return reader.status();
  CsvReader& r = **reader;
  if (!r.next()) return Status::InvalidArgument(path + ": empty file");
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < r.fields().size(); ++i) col[std::string(r.fields()[i])] = i;
  for (const char* need : {"gpu", "model", "partition", "stage", "forward_s", "backward_s"}) {
    if (!col.count(need)) {
      return Status::InvalidArgument(r.where() + ": " + need + ": column missing");
    }
  }
  std::vector<StageWorkEntry> out;
  while (r.next()) {
    const std::vector<std::string_view> f = split_quoted_csv_line(r.line());
    auto get = [&](const char* name) -> std::string_view {
      const size_t i = col.at(name);
      return i < f.size() ? f[i] : std::string_view();
    };
    auto bad = [&](const char* name, const std::string& why) {
      return Status::InvalidArgument(r.where() + ": " + name + ": " + why);
    };
    for (const char* name : {"gpu", "model", "partition"}) {
      if (get(name).empty()) return bad(name, "empty");
    }
    int64_t stage = 0;
    if (!parse_int64(get("stage"), stage) || stage < 0) {
      return bad("stage", "not an integer >= 0: '" + std::string(get("stage")) + "'");
    }
    PipelineStageWork w;
    for (auto [name, v] : {std::pair{"forward_s", &w.forward_s}, {"backward_s", &w.backward_s}}) {
      if (!parse_double(get(name), *v) || !std::isfinite(*v) || !(*v > 0)) {
        return bad(name, "not a number > 0: '" + std::string(get(name)) + "'");
      }
    }
    const std::string gpu(get("gpu")), model(get("model")), partition(get("partition"));
    StageWorkEntry* e = nullptr;
    for (auto& x : out) {
      if (x.gpu == gpu && x.model == model && x.partition == partition) e = &x;
    }
    if (!e) {
      out.push_back({gpu, model, partition, {}, r.line_number()});
      e = &out.back();
    }
    if (stage != static_cast<int64_t>(e->stages.size())) {
      return bad("stage", "want " + std::to_string(e->stages.size()) +
                              " (stages in order from 0), got " + std::to_string(stage));
    }
    e->stages.push_back(w);
  }
  if (!r.status().ok()) return r.status();
  return out;
}

const StageWorkEntry* find_stage_work(const std::vector<StageWorkEntry>& table,
                                      const std::string& gpu, const std::string& model,
                                      const std::string& partition) {
  for (const auto& e : table) {
    if (e.gpu == gpu && e.model == model && e.partition == partition) return &e;
  }
  return nullptr;
}

}  // namespace fw::sim
