// The results record's one writer (formats/results_record.hpp) against the field list the Python
// readers read by (formats/formats.json "results_point"): every field written is listed for its
// kind with the type written, and every listed field that may not be left out is written.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "shardcal/collectives.hpp"
#include "shardcal/dtype.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/results_record.hpp"
#include "shardcal/layout.hpp"
#include "shardcal/plan.hpp"

namespace f = shardcal::formats;
using nlohmann::json;

namespace {

json field_list(const char* which = "fields") {
  std::ifstream in(SHARDCAL_FORMATS_JSON);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str()).at("results_point").at(which);
}

// Whether `v` has the listed type ("integer", "numbers", "integer|null", ...; no "?").
bool has_type(const json& v, const std::string& type) {
  if (const auto bar = type.find('|'); bar != std::string::npos)
    return has_type(v, type.substr(0, bar)) || has_type(v, type.substr(bar + 1));
  if (type == "string") return v.is_string();
  if (type == "collective") return v.is_string() && shardcal::find_collective(v.get<std::string>());
  if (type == "dtype") {
    if (!v.is_string()) return false;
    try {
      shardcal::parse_dtype(v.get<std::string>());
      return true;
    } catch (const shardcal::Error&) {
      return false;
    }
  }
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "null") return v.is_null();
  if (type == "integers" || type == "numbers") {
    if (!v.is_array()) return false;
    for (const auto& e : v)
      if (!(type == "integers" ? e.is_number_integer() : e.is_number())) return false;
    return true;
  }
  ADD_FAILURE() << "unknown type in formats.json: " << type;
  return false;
}

// column 1: collective points, 2: transition points (the context list has one column).
void expect_matches_list(const json& rec, int column, const std::string& what,
                         const char* which = "fields") {
  const json list = field_list(which);
  std::set<std::string> listed;
  for (const auto& row : list) {
    const std::string name = row.at(0);
    std::string type = row.at(column);
    listed.insert(name);
    const bool optional = !type.empty() && type.back() == '?';
    if (optional) type.pop_back();
    if (type == "absent") {
      EXPECT_FALSE(rec.contains(name)) << what << ": writes \"" << name << "\", listed absent";
      continue;
    }
    if (!rec.contains(name)) {
      EXPECT_TRUE(optional) << what << ": does not write \"" << name << "\"";
      continue;
    }
    EXPECT_TRUE(has_type(rec.at(name), type))
        << what << ": \"" << name << "\" is " << rec.at(name).dump() << ", listed " << type;
    const std::size_t least = which == std::string("context") ? 2 : 3;
    if (row.size() > least && rec.at(name).is_number()) {
      EXPECT_GE(rec.at(name).get<double>(), row.at(least).get<double>()) << what << ": " << name;
    }
  }
  for (const auto& [k, v] : rec.items()) {
    EXPECT_TRUE(listed.count(k)) << what << ": writes \"" << k << "\", not in formats.json";
  }
}

f::PointRecord common() {
  f::PointRecord r;
  r.index = 3;
  r.point = {{"kind", "collective"}, {"mesh", "4"}};
  r.key = r.point.dump();
  r.group_size = 4;
  r.elem_size = 4;
  r.bytes = r.bytes_total = 64;
  r.bytes_max_rank = 16;
  r.bytes_convention = "whole output (n x per-rank)";
  r.samples_s = {1e-6, 2e-6};
  r.stats.n = 2;
  r.stats.p50 = 1.5e-6;
  r.algbw_GBps = 0.04;
  r.timing.mode = "per_iteration";
  return r;
}

}  // namespace

TEST(ResultsRecord, CollectiveRecordHasTheListedFields) {
  f::PointRecord r = common();
  r.collective = r.variant = "all_gather";
  r.counts = {4, 4, 4, 4};
  r.bytes_eff = 64;
  r.busbw_factor = 0.75;
  r.wrong = 0;
  expect_matches_list(f::to_json(r), 1, "collective record");
  const json j = f::to_json(r);
  EXPECT_TRUE(j.at("wrong").is_number_integer());
  EXPECT_TRUE(j.at("timing").at("warmup").is_null());  // not known: null, not a made-up 0
  EXPECT_FALSE(j.at("stats").contains("rank_means"));
  // A rooted, imported point with the tool's own rank statistic.
  r.root = 0;
  r.import = {{"rows", json::array()}};
  r.rank_means = f::RankMeans{3e-6, 2e-6, 1e-6};
  r.wrong.reset();
  expect_matches_list(f::to_json(r), 1, "imported rooted record");
  EXPECT_EQ(f::to_json(r).at("stats").at("rank_means").at("max"), 3e-6);
  EXPECT_TRUE(f::to_json(r).at("wrong").is_null());
}

TEST(ResultsRecord, TransitionRecordHasTheListedFields) {
  f::PointRecord r = common();
  f::TransitionRecord t;
  t.from = t.from_given = "S(0)";
  t.to = t.to_given = "R";
  t.shape = {4, 4};
  t.planner = {{"name", "greedy"}};
  f::PlanStepRecord s;
  s.collective = "all_gather";
  s.from = "S(0)";
  s.to = "R";
  s.traffic.collective = shardcal::Collective::AllGather;
  s.traffic.groups = s.traffic.plain_groups = 1;
  t.plan.push_back(s);
  r.transition = t;
  const json j = f::to_json(r);
  expect_matches_list(j, 2, "transition record");
  // The step carries the placements, the traffic fields and no price without a cost planner.
  const json& step = j.at("transition").at("plan").at(0);
  EXPECT_EQ(step.at("call"), "all_gather");
  EXPECT_EQ(step.at("from"), "S(0)");
  EXPECT_FALSE(step.contains("predicted_us"));
  EXPECT_FALSE(j.at("transition").contains("predicted_us"));
  r.transition->predicted_us = 12.5;
  r.transition->plan[0].predicted_us = 12.5;
  EXPECT_EQ(f::to_json(r).at("transition").at("predicted_us"), 12.5);
  EXPECT_EQ(f::to_json(r).at("transition").at("plan").at(0).at("predicted_us"), 12.5);
}

TEST(ResultsRecord, ContextRecordHasTheListedFields) {
  f::ContextRecord c;
  c.date = "2026-11-28T09:00:00Z";
  c.backend = "sim";
  c.world = 4;
  c.memory = "host";
  c.config = json::object();
  c.hosts = {{"a", {0, 1}}, {"b", {2, 3}}};
  c.planner = {{"name", "greedy"}};
  json j = f::to_json(c);
  expect_matches_list(j, 1, "sweep context", "context");
  // The hosts' shape is written from the hosts, never given twice.
  EXPECT_EQ(j.at("n_hosts"), 2);
  EXPECT_EQ(j.at("ranks_per_host"), json::array({2, 2}));
  EXPECT_TRUE(j.at("git_dirty").is_null());
  // An import's context: no planner, its provenance instead.
  c.planner = nullptr;
  c.import = {{"format", "osu"}};
  c.git_dirty = true;
  j = f::to_json(c);
  expect_matches_list(j, 1, "import context", "context");
  EXPECT_FALSE(j.contains("planner"));
  EXPECT_EQ(j.at("git_dirty"), true);
}
