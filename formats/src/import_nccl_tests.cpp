// nccl-tests output (text and -J JSON) -> ParsedLog (docs/IMPORT.md). Formats as written by
// NVIDIA/nccl-tests src/common.cu (writeDeviceReport, writeResultHeader, the row printers) and
// src/util.cu (the JSON writer, file version 1-3).
#include <algorithm>
#include <cmath>
#include <map>

#include "import_text.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/import_logs.hpp"
#include "shardcal/formats/json.hpp"

namespace shardcal::formats {
namespace {

using namespace import_detail;
using nlohmann::json;

// NCCL_VERSION_CODE: 22602 -> "2.26.2" (from 2.9 on: major*10000 + minor*100 + patch; before,
// major*1000 + minor*100 + patch).
std::string nccl_version_text(std::int64_t code) {
  if (code <= 0) return {};
  if (code >= 20900)
    return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
           std::to_string(code % 100);
  return std::to_string(code / 1000) + "." + std::to_string(code / 100 % 10) + "." +
         std::to_string(code % 100);
}

// "#  Rank  0 Group  0 Pid 1583987 on HOST device  0 [0000:29:00] NVIDIA H100 80GB HBM3" (older:
// no Group, or no Pid). nullopt when the line is not a rank line.
std::optional<LogRank> parse_rank_line(std::string_view body) {
  const auto t = split_ws(body);
  if (t.size() < 6 || t[0] != "Rank") return std::nullopt;
  LogRank r;
  const auto rank = to_int(t[1]);
  if (!rank || *rank < 0 || *rank > (1 << 24)) return std::nullopt;
  r.rank = int(*rank);
  std::size_t i = 2;
  while (i + 1 < t.size() && (t[i] == "Group" || t[i] == "Pid")) {
    if (t[i] == "Group")
      if (const auto g = to_int(t[i + 1]); g && *g >= 0 && *g < (1 << 24)) r.group = int(*g);
    i += 2;
  }
  if (i + 3 >= t.size() || t[i] != "on" || t[i + 2] != "device") return std::nullopt;
  r.host = std::string(t[i + 1]);
  if (const auto d = to_int(t[i + 3])) r.device = int(std::clamp<std::int64_t>(*d, -1, 1 << 20));
  // The name follows the bus id in brackets.
  const std::size_t close = body.find(']', std::size_t(t[i + 3].data() - body.data()));
  if (close != std::string_view::npos) r.gpu = std::string(trim(body.substr(close + 1)));
  return r;
}

// One half of the table (out-of-place or in-place): its columns' positions.
struct Block {
  std::string placement;
  int time = -1, algbw = -1, busbw = -1, wrong = -1;
  bool wrong_is_count = true;  // "#wrong" (a count) vs the old "error" (max abs error)
};

struct Table {
  int header_line = 0;
  std::vector<std::string> names;
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  std::vector<Block> blocks;
  std::size_t width = 0;   // tokens a row has
  bool timestamp = false;  // rows may carry more tokens (a timestamp)
};

std::optional<Table> parse_header(std::string_view body, int line) {
  const auto t = split_ws(body);
  if (t.size() < 3 || t[0] != "size") return std::nullopt;
  Table tb;
  tb.header_line = line;
  for (auto x : t) tb.names.emplace_back(x);
  std::vector<int> starts;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string_view n = t[i];
    if (n == "time" || n == "cputime") starts.push_back(int(i));
    if (!starts.empty()) continue;
    if (n == "size")
      tb.size = int(i);
    else if (n == "count")
      tb.count = int(i);
    else if (n == "type")
      tb.type = int(i);
    else if (n == "redop")
      tb.redop = int(i);
    else if (n == "root")
      tb.root = int(i);
  }
  if (starts.empty() || starts.size() > 2) return std::nullopt;
  for (std::size_t b = 0; b < starts.size(); ++b) {
    Block bl;
    bl.placement = b == 0 ? "out_of_place" : "in_place";
    bl.time = starts[b];
    const std::size_t end = b + 1 < starts.size() ? std::size_t(starts[b + 1]) : t.size();
    for (std::size_t i = std::size_t(starts[b]); i < end; ++i) {
      if (t[i] == "algbw")
        bl.algbw = int(i);
      else if (t[i] == "busbw")
        bl.busbw = int(i);
      else if (t[i] == "#wrong")
        bl.wrong = int(i);
      else if (t[i] == "error")
        bl.wrong = int(i), bl.wrong_is_count = false;
    }
    tb.blocks.push_back(bl);
  }
  tb.width = t.size();
  if (t.back() == "timestamp") tb.timestamp = true, tb.width -= 1;
  return tb;
}

void parse_nthread_line(std::string_view body, ParsedLog& log) {
  const auto t = split_ws(body);
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    auto num = [&](std::size_t k) -> std::optional<std::int64_t> {
      return k < t.size() ? to_int(t[k]) : std::nullopt;
    };
    auto clamp_int = [](std::int64_t v) { return int(std::clamp<std::int64_t>(v, -1, 1 << 30)); };
    if (t[i] == "nThread" || t[i] == "nGpus" || t[i] == "minBytes" || t[i] == "maxBytes") {
      if (auto v = num(i + 1)) log.header[std::string(t[i])] = *v;
    } else if (t[i] == "step:") {
      log.header["step"] = std::string(t[i + 1]);
    } else if (t[i] == "warmup" && t[i + 1] == "iters:") {
      if (auto v = num(i + 2)) log.warmup = clamp_int(*v), log.header["warmup_iters"] = *v;
      ++i;
    } else if (t[i] == "agg" && t[i + 1] == "iters:") {
      if (auto v = num(i + 2)) log.agg_iters = clamp_int(*v), log.header["agg_iters"] = *v;
      ++i;
    } else if (t[i] == "iters:") {
      if (auto v = num(i + 1)) log.iters = clamp_int(*v), log.header["iters"] = *v;
    } else if (t[i] == "validation:" || t[i] == "graph:" || t[i] == "unalign:") {
      if (auto v = num(i + 1)) log.header[std::string(t[i].substr(0, t[i].size() - 1))] = *v;
    }
  }
}

// A program name (`all_reduce_perf`) anywhere on a line that is not a comment: the command line.
std::optional<std::string> perf_program(std::string_view line) {
  for (std::string_view tok : split_ws(line)) {
    const std::size_t slash = tok.find_last_of('/');
    if (slash != std::string_view::npos) tok = tok.substr(slash + 1);
    if (tok.size() > 5 && tok.substr(tok.size() - 5) == "_perf") {
      bool word = true;
      for (char c : tok)
        word = word && ((c >= 'a' && c <= 'z') || c == '_' || (c >= '0' && c <= '9'));
      if (word) return std::string(tok);
    }
  }
  return std::nullopt;
}

// Ranks per communicator: nccl-tests splits the ranks by colour (the rank lines' Group).
int group_size(const std::vector<LogRank>& ranks) {
  std::map<int, int> n;
  for (const LogRank& r : ranks) ++n[r.group];
  return n.empty() ? 0 : int(ranks.size() / n.size());
}

void set_collective_from_program(ParsedLog& log, const std::string& program,
                                 const std::string& from) {
  log.benchmark = program;
  log.benchmark_from = from;
  std::string why;
  log.collective = nccl_program(program, why);
  log.skip_reason = why;
}

}  // namespace

ParsedLog parse_nccl_tests_text(std::string_view text, const std::string& name) {
  ParsedLog log;
  log.format = LogFormat::NcclTests;
  log.tool = "nccl-tests";
  log.backend = "nccl";
  log.memory = "cuda";
  std::optional<Table> table;
  std::string program_from_test, program_from_command;
  int test_line = 0;
  bool table_closed = false;
  TableRows rows(name, "table header");
  std::map<int, bool> rank_seen;
  for_each_line(text, [&](int ln, std::string_view raw) {
    const std::string_view line = trim(strip_launcher_tags(raw));
    if (line.empty()) return;
    // NCCL's own version line (NCCL_DEBUG=VERSION/INFO): "... NCCL INFO NCCL
    // version 2.26.2+cuda12.4" or "NCCL version 2.16.5+cuda11.8".
    if (const std::size_t v = line.find("NCCL version "); v != std::string_view::npos) {
      const auto t = split_ws(line.substr(v + 13));
      if (!t.empty() && !t[0].empty() && t[0][0] >= '0' && t[0][0] <= '9')
        log.library_versions["NCCL"] = std::string(t[0]);
      return;
    }
    if (line[0] != '#') {
      if (line.find(" NCCL INFO ") != std::string_view::npos ||
          line.find(" NCCL WARN ") != std::string_view::npos)
        return;
      const auto t = split_ws(line);
      if (!t.empty() && is_uint_token(t[0]) && table && !table_closed) {
        const Table& tb = *table;
        const bool fits = t.size() >= tb.width && (tb.timestamp || t.size() <= tb.width);
        if (!rows.accept(ln, t.size(), fits, tb.width, tb.header_line)) return;
        auto field = [&](int col) -> std::string_view {
          return col < 0 ? std::string_view() : t[std::size_t(col)];
        };
        auto bad = [&](int col, const char* what) {
          fail(name, ln,
               std::string("column ") + tb.names[std::size_t(col)] + " is \"" +
                   std::string(field(col)) + "\", expected " + what +
                   "; the row is damaged: repair or delete the line");
        };
        const auto size = to_int(field(tb.size));
        if (!size || *size < 0) bad(tb.size, "a byte count");
        if (*size == 0) {
          ++log.skipped_zero;
          return;
        }
        LogRow base;
        base.line = ln;
        base.size = *size;
        if (tb.count >= 0) {
          const auto c = to_int(field(tb.count));
          if (!c || *c < 0) bad(tb.count, "an element count");
          base.count = *c;
        }
        base.type_name = tb.type >= 0 ? std::string(field(tb.type)) : "float";
        base.redop = tb.redop >= 0 ? std::string(field(tb.redop)) : "none";
        if (tb.root >= 0) {
          const auto r = to_int(field(tb.root));
          if (!r || *r < -1 || *r > (1 << 24)) bad(tb.root, "a root rank or -1");
          base.root = int(*r);
        }
        const auto dt = nccl_type(base.type_name);
        if (!dt) {
          ++log.skipped_dtype;
          log.notes.push_back(name + ":" + std::to_string(ln) + ": type " + base.type_name +
                              " has no shardcal dtype: row skipped");
          return;
        }
        base.dtype = *dt;
        for (const Block& bl : tb.blocks) {
          LogRow r = base;
          r.placement = bl.placement;
          const std::string_view tt = field(bl.time);
          if (tt == "N/A") {
            ++log.skipped_na;
            continue;
          }
          const auto time = to_double(tt);
          if (!time || *time < 0) bad(bl.time, "a time in us");
          if (*time == 0) {
            ++log.skipped_na;
            log.notes.push_back(name + ":" + std::to_string(ln) + ": " + bl.placement +
                                " time 0 for " + std::to_string(*size) + " B: skipped");
            continue;
          }
          r.time_us = *time;
          if (bl.algbw >= 0) r.algbw_GBps = to_double(field(bl.algbw)).value_or(0);
          if (bl.busbw >= 0) r.busbw_GBps = to_double(field(bl.busbw)).value_or(0);
          if (bl.wrong >= 0 && bl.wrong_is_count && field(bl.wrong) != "N/A") {
            const auto w = to_double(field(bl.wrong));
            if (!w || *w < 0) bad(bl.wrong, "a count of wrong elements or N/A");
            r.wrong = *w;
          }
          log.rows.push_back(std::move(r));
        }
        return;
      }
      if (auto p = perf_program(line); p && program_from_command.empty()) {
        program_from_command = *p;
        log.command_line = std::string(line);
      }
      consider_launch_line(log, line, ln, name);
      consider_date_line(log, line, ln);
      return;
    }
    const std::string_view body = trim(line.substr(1));
    if (starts_with(body, "nccl-tests version ")) {
      const auto t = split_ws(body.substr(19));
      if (!t.empty()) log.tool_version = std::string(t[0]);
      for (auto x : t)
        if (starts_with(x, "nccl-library=")) {
          const auto code = to_int(x.substr(13));
          if (code && !log.library_versions.count("NCCL"))
            log.library_versions["NCCL"] = nccl_version_text(*code);
        }
      return;
    }
    for (std::string_view key : {std::string_view("Collective test starting: "),
                                 std::string_view("Collective test concluded: ")}) {
      if (!starts_with(body, key)) continue;
      const std::string prog(trim(body.substr(key.size())));
      if (!program_from_test.empty() && prog != program_from_test)
        fail(name, ln,
             "a second test (" + prog + ") after " + program_from_test + " (line " +
                 std::to_string(test_line) +
                 "); split the log into one file per nccl-tests program");
      if (program_from_test.empty()) test_line = ln;
      program_from_test = prog;
      return;
    }
    if (starts_with(body, "nThread ")) {
      parse_nthread_line(body, log);
      return;
    }
    if (starts_with(body, "Blocking Enabled") || starts_with(body, "Per-Iteration Report")) {
      log.header["notes"].push_back(std::string(body));
      return;
    }
    if (auto r = parse_rank_line(body)) {
      if (rank_seen[r->rank])
        fail(name, ln,
             "rank " + std::to_string(r->rank) +
                 " is listed twice; the log mixes two runs: "
                 "split it into one file per run");
      rank_seen[r->rank] = true;
      log.ranks.push_back(std::move(*r));
      return;
    }
    if (auto h = parse_header(body, ln)) {
      if (table && table->names != h->names)
        fail(name, ln,
             "a second table header with other columns than line " +
                 std::to_string(table->header_line) +
                 "; split the log into one file per nccl-tests run");
      if (!table) table = std::move(h);
      table_closed = false;
      return;
    }
    if (starts_with(body, "Out of bounds values") || starts_with(body, "Avg bus bandwidth")) {
      table_closed = true;
      return;
    }
  });
  if (!table)
    throw Error(name +
                ":1: no nccl-tests table header (`#  size  count  type  redop  root  time "
                "algbw  busbw  #wrong ...`) in the log; is this nccl-tests output? "
                "(--format osu for OSU logs)");
  finish_launch(log, name);
  rows.finish(log, table->header_line);
  std::sort(log.ranks.begin(), log.ranks.end(),
            [](const LogRank& a, const LogRank& b) { return a.rank < b.rank; });
  for (std::size_t i = 0; i < log.ranks.size(); ++i)
    if (log.ranks[i].rank != int(i))
      throw Error(name + ": the rank lines list ranks " + std::to_string(log.ranks.front().rank) +
                  ".." + std::to_string(log.ranks.back().rank) + " with gaps (rank " +
                  std::to_string(i) +
                  " missing); the log is incomplete: pass --hosts and "
                  "--ranks-per-host, or repair the `#  Rank` lines");
  if (!program_from_test.empty())
    set_collective_from_program(log, program_from_test,
                                "`# Collective test starting` line " + std::to_string(test_line));
  else if (!program_from_command.empty())
    set_collective_from_program(log, program_from_command, "the command line");
  else if (!log.rows.empty())
    infer_from_table(log, group_size(log.ranks));
  return log;
}

namespace {

// JSON getters naming the field and its line.
struct JsonDoc {
  std::string_view text;
  const std::string& name;
  [[noreturn]] void fail_at(const std::string& pointer, const std::string& what) const {
    fail(name, std::max(1, line_of(text, pointer)),
         pointer + ": " + what + "; is this nccl-tests -J output (NVIDIA/nccl-tests src/util.cu)?");
  }
  const json& object(const json& parent, const std::string& pointer, const char* key) const {
    const auto it = parent.find(key);
    if (it == parent.end() || !it->is_object()) fail_at(pointer + "/" + key, "expected an object");
    return *it;
  }
  // A number; nccl-tests writes NaN as the string "nan": nullopt then, and for null.
  std::optional<double> number(const json& parent, const std::string& pointer,
                               const char* key) const {
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return std::nullopt;
    if (it->is_string() && it->get<std::string>() == "nan") return std::nullopt;
    if (!it->is_number())
      fail_at(pointer + "/" + key, "expected a number, got " + it->dump().substr(0, 40));
    const double v = it->get<double>();
    if (!std::isfinite(v)) fail_at(pointer + "/" + key, "expected a finite number");
    return v;
  }
  std::string string(const json& parent, const std::string& pointer, const char* key) const {
    const auto it = parent.find(key);
    if (it == parent.end() || !it->is_string()) fail_at(pointer + "/" + key, "expected a string");
    return it->get<std::string>();
  }
};

}  // namespace

ParsedLog parse_nccl_tests_json(std::string_view text, const std::string& name) {
  ParsedLog log;
  log.format = LogFormat::NcclTestsJson;
  log.tool = "nccl-tests";
  log.backend = "nccl";
  log.memory = "cuda";
  const json doc = parse_json(text, name,
                              "is this nccl-tests -J output? A run killed before its end leaves "
                              "the JSON unterminated: import its text output instead",
                              64);
  const JsonDoc d{text, name};
  if (!doc.is_object()) d.fail_at("", "the document is not a JSON object");
  if (const auto v = d.number(doc, "", "version")) log.header["json_version"] = *v;
  if (doc.contains("start_time") && doc["start_time"].is_string())
    log.header["start_time"] = doc["start_time"];
  if (const auto v = d.number(doc, "", "nccl_version"); v && *v > 0 && *v < 1e9)
    log.library_versions["NCCL"] = nccl_version_text(std::int64_t(*v));
  std::string program;
  if (doc.contains("args") && doc["args"].is_array() && !doc["args"].empty()) {
    std::string cl;
    for (const json& a : doc["args"])
      if (a.is_string()) cl += (cl.empty() ? "" : " ") + a.get<std::string>();
    log.command_line = cl;
    if (doc["args"][0].is_string()) program = doc["args"][0].get<std::string>();
    const std::size_t slash = program.find_last_of('/');
    if (slash != std::string::npos) program = program.substr(slash + 1);
  }
  const json& cfg = d.object(doc, "", "config");
  auto cfg_int = [&](const char* k) -> std::optional<int> {
    const auto v = d.number(cfg, "/config", k);
    if (!v) return std::nullopt;
    return int(std::clamp(*v, -1.0, double(1 << 30)));
  };
  if (auto v = cfg_int("warmup_iters")) log.warmup = *v;
  if (auto v = cfg_int("iterations")) log.iters = *v;
  if (auto v = cfg_int("aggregated_iterations")) log.agg_iters = *v;
  for (const char* k :
       {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor", "step_bytes",
        "warmup_iters", "iterations", "aggregated_iterations", "validation", "graph",
        "blocking_collectives", "per_iter_timing", "per_iter_skip"})
    if (cfg.contains(k) && (cfg[k].is_number() || cfg[k].is_string() || cfg[k].is_boolean()))
      log.header[k] = cfg[k];
  if (cfg.contains("devices")) {
    const json& devs = cfg["devices"];
    if (!devs.is_array()) d.fail_at("/config/devices", "expected an array");
    for (std::size_t i = 0; i < devs.size(); ++i) {
      const std::string p = "/config/devices/" + std::to_string(i);
      if (!devs[i].is_object()) d.fail_at(p, "expected an object");
      LogRank r;
      const auto rank = d.number(devs[i], p, "rank");
      if (!rank || *rank < 0 || *rank > (1 << 24) || *rank != std::floor(*rank))
        d.fail_at(p + "/rank", "expected a rank number");
      r.rank = int(*rank);
      r.host = d.string(devs[i], p, "hostname");
      if (const auto g = d.number(devs[i], p, "group"); g && *g >= 0 && *g < (1 << 24))
        r.group = int(*g);
      r.device =
          int(std::clamp(d.number(devs[i], p, "device").value_or(-1), -1.0, double(1 << 20)));
      if (devs[i].contains("device_info") && devs[i]["device_info"].is_string())
        r.gpu = devs[i]["device_info"].get<std::string>();
      log.ranks.push_back(std::move(r));
    }
  }
  std::sort(log.ranks.begin(), log.ranks.end(),
            [](const LogRank& a, const LogRank& b) { return a.rank < b.rank; });
  for (std::size_t i = 0; i < log.ranks.size(); ++i)
    if (log.ranks[i].rank != int(i))
      d.fail_at("/config/devices",
                "ranks are not 0..n-1 (rank " + std::to_string(i) + " missing or listed twice)");
  const auto res = doc.find("results");
  if (res == doc.end() || !res->is_array()) d.fail_at("/results", "expected an array");
  for (std::size_t i = 0; i < res->size(); ++i) {
    const std::string p = "/results/" + std::to_string(i);
    const json& row = (*res)[i];
    if (!row.is_object()) d.fail_at(p, "expected an object");
    // Rows of a JSON file are named by their pointer: a line number would cost a walk of the
    // whole text per row (line_of), quadratic in big -I files. Errors still give the line.
    LogRow base;
    base.pointer = p;
    const auto size = d.number(row, p, "size");
    if (!size || *size < 0 || *size > 9e18 || *size != std::floor(*size))
      d.fail_at(p + "/size", "expected a byte count");
    base.size = std::int64_t(*size);
    if (base.size == 0) {
      ++log.skipped_zero;
      continue;
    }
    if (const auto c = d.number(row, p, "count"); c && *c >= 0 && *c < 9e18)
      base.count = std::int64_t(*c);
    base.type_name = d.string(row, p, "type");
    base.redop = d.string(row, p, "redop");
    if (row.contains("root") && row["root"].is_string())
      if (const auto r = to_int(trim(row["root"].get<std::string>()));
          r && *r >= -1 && *r < (1 << 24))
        base.root = int(*r);
    const auto dt = nccl_type(base.type_name);
    if (!dt) {
      ++log.skipped_dtype;
      log.notes.push_back(name + ": " + p + ": type " + base.type_name +
                          " has no shardcal dtype: row skipped");
      continue;
    }
    base.dtype = *dt;
    for (const char* placement : {"out_of_place", "in_place"}) {
      const auto it = row.find(placement);
      if (it == row.end() || it->is_null()) continue;
      const std::string pp = p + "/" + placement;
      if (!it->is_object()) d.fail_at(pp, "expected an object or null");
      LogRow r = base;
      r.placement = placement;
      auto t = d.number(*it, pp, "time");
      if (!t) t = d.number(*it, pp, "cpu_time");
      if (!t || *t <= 0) {
        ++log.skipped_na;
        continue;
      }
      r.time_us = *t;
      r.algbw_GBps = d.number(*it, pp, "alg_bw").value_or(0);
      r.busbw_GBps = d.number(*it, pp, "bus_bw").value_or(0);
      if (const auto w = d.number(*it, pp, "nwrong")) {
        if (*w < 0) d.fail_at(pp + "/nwrong", "expected a count >= 0");
        r.wrong = *w;
      }
      const std::string per_iter = std::string(placement) + "_per_iter";
      if (const auto pi = row.find(per_iter); pi != row.end() && pi->is_object()) {
        const std::string pip = p + "/" + per_iter;
        const auto ts = pi->find("times_us");
        if (ts != pi->end()) {
          if (!ts->is_array()) d.fail_at(pip + "/times_us", "expected an array");
          // The tool's own summary skips the first `skipped_iterations` (-I's skip): so do we.
          const double skip = d.number(*pi, pip, "skipped_iterations").value_or(0);
          for (std::size_t k = 0; k < ts->size(); ++k) {
            const json& x = (*ts)[k];
            if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() <= 0)
              d.fail_at(pip + "/times_us/" + std::to_string(k), "expected a positive time in us");
            if (double(k) >= skip) r.samples_us.push_back(x.get<double>());
          }
        }
      }
      log.rows.push_back(std::move(r));
    }
  }
  if (log.rows.empty() && log.skipped_zero + log.skipped_dtype + log.skipped_na == 0)
    d.fail_at("/results",
              "the results list is empty (did the run stop before its first size?); "
              "nothing to import");
  if (!program.empty())
    set_collective_from_program(log, program, "args[0] of the JSON");
  else
    infer_from_table(log, group_size(log.ranks));
  if (log.header.contains("start_time")) {
    const std::string st = log.header["start_time"].get<std::string>();
    if (auto when = date_line_utc(st)) {
      log.run_date = *when;
      log.run_date_from = "the log's start_time";
    } else if (auto local = date_line_unconverted(st); local && local->zone.empty()) {
      // nccl-tests writes its host's local time without a zone: recorded as written.
      log.run_date = local->local;
      log.run_date_from = "the log's start_time, zone not stated";
    } else {
      log.run_date_ignored = "the log's start_time \"" + st + "\" " +
                             (local ? "names the zone " + local->zone +
                                          ", which shardbench does not convert"
                                    : std::string("is not a date shardbench reads")) +
                             "; not used";
    }
  }
  return log;
}

}  // namespace shardcal::formats
