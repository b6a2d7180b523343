// The gate's inputs (docs/GATE.md "Inputs"): sweep results through the formats reader, Google
// Benchmark JSON, and pooling several runs of one side.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "detail.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/json_cursor.hpp"
#include "shardcal/formats/results_reader.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/formats/sha256.hpp"
#include "shardcal/gate/compare.hpp"

namespace shardcal::gate {
namespace {

using nlohmann::json;
using detail::kGbenchFormat;
constexpr const char* kSweepFormat = formats::kResultsSchema;

void set_env(json& env, const std::string& field, const json& v) {
  if (!env.contains(field)) {
    env[field] = v;
    return;
  }
  json& cur = env[field];
  // Distinct values of several context records: promote to a list of distinct values.
  if (cur == v) return;
  if (cur.is_object() && cur.contains("values_of_several_contexts")) {
    json& arr = cur["values_of_several_contexts"];
    if (std::find(arr.begin(), arr.end(), v) == arr.end()) arr.push_back(v);
  } else {
    cur = json{{"values_of_several_contexts", json::array({cur, v})}};
  }
}

constexpr const char* kGbenchFix = "expected Google Benchmark JSON (--benchmark_format=json)";

RunData read_gbench(const std::string& path, const std::string& text, const json& doc) {
  RunData r;
  r.path = path;
  r.format = kGbenchFormat;
  const json& ctx = doc["context"];
  const json& benches = doc["benchmarks"];
  if (!ctx.is_object() || !benches.is_array())
    throw Error(path +
                ": \"context\" must be an object and \"benchmarks\" an array (Google "
                "Benchmark JSON, --benchmark_format=json)");
  for (const char* k : {"library_build_type", "num_cpus", "library_version"})
    if (ctx.contains(k)) r.env[k] = ctx[k];
  const formats::JsonSource src(path, text);
  const formats::JsonCursor all(src, benches, "/benchmarks", kGbenchFix);
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const formats::JsonCursor b = all[i].object();
    // Optional fields of a given type: a wrong type is malformed input naming the field.
    auto opt_string = [&](const char* f, const char* dflt) {
      const auto x = b.optional(f);
      return x ? x->string() : std::string(dflt);
    };
    if (opt_string("run_type", "iteration") == "aggregate") continue;
    std::string key;
    if (const auto x = b.optional("run_name"); x && x->json().is_string())
      key = x->string();
    else
      key = b.string_at("name", "every run has a \"run_name\" or \"name\" string");
    if (const auto x = b.optional("error_occurred"); x && x->boolean()) {
      const auto msg = b.optional("error_message");
      r.skipped.push_back({key, "error_occurred: " + (!msg ? std::string()
                                                       : msg->json().is_string() ? msg->string()
                                                                                 : msg->json().dump())});
      continue;
    }
    const double real_time = b.number_at("real_time", "every run has it", 0.0);
    const std::string unit = opt_string("time_unit", "ns");
    double scale = 0;
    if (unit == "ns")
      scale = 1e-9;
    else if (unit == "us")
      scale = 1e-6;
    else if (unit == "ms")
      scale = 1e-3;
    else if (unit == "s")
      scale = 1;
    else
      b.required("time_unit", "").fail("unknown time_unit \"" + unit + "\"; expected ns, us, ms or s");
    const double t = real_time * scale;
    if (!(t > 0) || !std::isfinite(t))
      b.required("real_time", "").fail("real_time must be a positive finite number");
    auto [it, fresh] = index.try_emplace(key, r.points.size());
    if (fresh) r.points.push_back({key, key, {}});
    r.points[it->second].samples_s.push_back(t);
  }
  return r;
}

RunData read_sweep(const std::string& path) {
  const formats::ResultSet rs = formats::read_results({path});
  RunData r;
  r.path = path;
  r.format = kSweepFormat;
  for (const json& c : rs.files.at(0).context_records) {
    for (const char* k : {"backend", "memory", "world", "n_hosts", "ranks_per_host"})
      if (c.contains(k)) set_env(r.env, k, c[k]);
    for (const char* group : {"library_versions", "backend_settings"})
      if (c.contains(group) && c[group].is_object())
        for (const auto& [name, v] : c[group].items())
          set_env(r.env, std::string(group) + "." + name, v);
  }
  for (const auto& p : rs.collectives) r.points.push_back({p.key, p.label, p.samples_s});
  for (const auto& t : rs.transitions) {
    // Local steps on a platform that does not time computation: a zero has no ratio.
    if (std::any_of(t.samples_s.begin(), t.samples_s.end(), [](double d) { return d == 0; })) {
      r.skipped.push_back({t.key, "zero-time transition (local steps only; nothing to compare) (" + t.where + ")", false});
      continue;
    }
    r.points.push_back({t.key, t.label, t.samples_s});
  }
  for (const auto& s : rs.skipped)  // reasons: "wrong = N" | "no samples or ..." (results.hpp)
    r.skipped.push_back({s.key, s.reason + " (" + s.where + ")", s.reason.rfind("wrong", 0) == 0});
  return r;
}

}  // namespace

RunData read_run(const std::string& path) {
  const std::string text = formats::read_text_file(
      path, "the run",
      "check the path; inputs are `shardbench sweep --out FILE` results or Google Benchmark "
      "--benchmark_out=FILE.json files");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error(path +
                ": the file is empty; expected sweep results (JSON Lines) or Google "
                "Benchmark JSON");
  RunData r;
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    // Not one valid document. JSON Lines (sweep results) start with a complete record on the
    // first line, and the results reader names the bad record; otherwise the text is meant as one
    // document (Google Benchmark JSON spans many lines), so the error must name its line and
    // column, or the field of an out-of-range number.
    const std::size_t b = text.find_first_not_of(" \t\r\n");
    const std::string first = text.substr(b, text.find('\n', b) - b);
    if ((text[b] == '{' || text[b] == '[') &&
        json::parse(first, nullptr, /*allow_exceptions=*/false).is_discarded())
      doc = formats::parse_json(text, path,
                                "expected Google Benchmark JSON (--benchmark_out=FILE.json) or "
                                "sweep results (JSON Lines)",
                                0, "no benchmark writes it: the file is corrupt or was edited");
  }
  if (!doc.is_discarded() && doc.is_object() && doc.contains("benchmarks") &&
      doc.contains("context")) {
    r = read_gbench(path, text, doc);
  } else if (!doc.is_discarded() && !(doc.is_object() && doc.contains("type"))) {
    throw Error(path +
                ": a JSON document that is neither Google Benchmark JSON (an object with "
                "\"context\" and \"benchmarks\") nor sweep results (JSON Lines whose "
                "first record has \"type\": \"context\")");
  } else {
    r = read_sweep(path);
  }
  std::set<std::string> seen;
  for (const auto& p : r.points)
    if (!seen.insert(p.key).second && r.format == kSweepFormat)
      throw Error(path + ": point key " + p.key +
                  " appears twice; point keys are unique in a "
                  "sweep results file (the file is corrupt)");
  if (r.points.empty() && r.skipped.empty())
    throw Error(path + ": no points (" + r.format + "); nothing to compare");
  r.sha256 = formats::sha256_file(path);
  return r;
}

RunData pool_runs(const std::vector<RunData>& runs, const std::string& side) {
  if (runs.empty()) throw Error("no " + side + " file given");
  if (runs.size() == 1) return runs[0];
  RunData out;
  out.format = runs[0].format;
  out.env = runs[0].env;
  out.runs = 0;
  std::map<std::string, std::size_t> index;
  std::map<std::string, std::string> by_sha;  // sha256 -> first path
  for (const RunData& r : runs) {
    if (auto [it, fresh] = by_sha.try_emplace(r.sha256, r.path); !fresh)
      throw Error("the " + side + " files " + it->second + " and " + r.path +
                  " are the same file (sha256 " + r.sha256 +
                  "); pooling it twice would count its samples twice. Give each run once");
    if (r.format != out.format)
      throw Error("the " + side + " files " + runs[0].path + " (" + runs[0].format + ") and " +
                  r.path + " (" + r.format + ") are of different kinds; pool files of one kind");
    if (r.env != out.env) {
      std::string d;
      for (const auto& e : compare_env(runs[0], r))
        d += (d.empty() ? "" : "; ") + e.field + ": " + e.baseline.dump() + " vs " +
             e.candidate.dump();
      if (d.empty()) d = "fields present in one file only";
      throw Error("the " + side + " files " + runs[0].path + " and " + r.path +
                  " come from different environments (" + d + "); pool only runs of one stack");
    }
    out.path += (out.path.empty() ? "" : " + ") + r.path;
    out.sha256 += (out.sha256.empty() ? "" : ",") + r.sha256;
    out.runs += r.runs;
    for (const Series& s : r.points) {
      auto [it, fresh] = index.try_emplace(s.key, out.points.size());
      if (fresh) {
        out.points.push_back(s);
        out.points.back().run_sizes = {s.samples_s.size()};
      } else {
        Series& p = out.points[it->second];
        p.samples_s.insert(p.samples_s.end(), s.samples_s.begin(), s.samples_s.end());
        p.run_sizes.push_back(s.samples_s.size());
      }
    }
    for (const Skipped& k : r.skipped)
      out.skipped.push_back({k.key, k.reason + " [" + r.path + "]", k.wrong});
  }
  return out;
}

}  // namespace shardcal::gate
