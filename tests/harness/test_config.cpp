// Sweep config validation: every bad-config path gives one message naming the file, the JSON
// pointer and a fix; good configs expand to the expected points.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "shardcal/collectives.hpp"
#include "shardcal/error.hpp"
#include "sweep/config.hpp"

using namespace shardbench;
using namespace shardbench::sweep;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const shardcal::Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Parse + expand for `world` ranks, return the error text.
std::string config_error(const std::string& text, int world = 4) {
  return error_of([&] { (void)expand_points(parse_config_text(text, "x.json"), world); });
}

const char* kBase = R"({"meshes": ["4", "2x2"], "collectives": ["all_gather"],
                        "sizes": {"min": 8, "max": 64, "factor": 2}})";

nlohmann::json base() { return nlohmann::json::parse(kBase); }
std::string with(const char* key, const nlohmann::json& v) {
  auto j = base();
  j[key] = v;
  return j.dump();
}

}  // namespace

TEST(SweepConfig, UnknownCollectiveListsTheValidNames) {
  // Every name of the collective table, in table order (a new collective joins by itself).
  std::string names;
  for (const auto& info : shardcal::kCollectives)
    names += (names.empty() ? "" : ", ") + std::string(info.name);
  ASSERT_EQ(names.rfind("all_gather, reduce_scatter, all_reduce, ", 0), 0u) << names;
  EXPECT_EQ(config_error(with("collectives", {"all_gather", "allgather"})),
            "x.json: /collectives/1: unknown collective \"allgather\"; expected one of " + names);
  EXPECT_EQ(config_error(with("collectives", {{{"op", "bcast"}}})),
            "x.json: /collectives/0/op: unknown collective \"bcast\"; expected one of " + names);
}

TEST(SweepConfig, MeshNotMatchingTheWorld) {
  EXPECT_EQ(config_error(with("meshes", {"4", "2x4"})),
            "x.json: /meshes/1: mesh \"2x4\" has 8 ranks but the world has 4; use meshes whose "
            "extents multiply to 4 (e.g. \"4\", \"2x2\") or {\"factorizations\": true}");
  EXPECT_EQ(config_error(with("meshes", {"2x3"}), 6), "<no error>");
  EXPECT_NE(config_error(with("meshes", {"2x0"})).find("x.json: /meshes/0: bad mesh \"2x0\""), std::string::npos);
  EXPECT_EQ(config_error(with("meshes", {"4", "4"})), "x.json: /meshes/1: duplicate mesh \"4\"");
}

TEST(SweepConfig, SizesInvertedOrMissing) {
  EXPECT_EQ(config_error(with("sizes", {{"min", 1024}, {"max", 8}, {"factor", 2}})),
            "x.json: /sizes: min (1024) is greater than max (8); swap them");
  EXPECT_EQ(config_error(with("sizes", {{"min", 8}, {"max", 64}, {"factor", 1}})),
            "x.json: /sizes/factor: value 1 is out of range; expected 2 <= value <= 1048576");
  EXPECT_EQ(config_error(with("sizes", {{"min", 8}, {"max", 64}})),
            "x.json: /sizes/factor: missing; sizes needs min, max (bytes) and factor");
  EXPECT_EQ(config_error(with("sizes", {64, 8})),
            "x.json: /sizes/1: sizes must be strictly increasing (8 after 64)");
  EXPECT_EQ(config_error(with("sizes", {0})),
            "x.json: /sizes/0: value 0 is out of range; expected 1 <= value <= 1099511627776");
  auto j = base();
  j.erase("sizes");
  EXPECT_NE(config_error(j.dump()).find("x.json: /sizes: missing (required)"), std::string::npos);
}

TEST(SweepConfig, BadPlacement) {
  const std::string parse_err = config_error(
      with("transitions", {{{"mesh", "2x2"}, {"from", "S(0),Q"}, {"to", "R,R"}}}));
  EXPECT_EQ(parse_err.rfind("x.json: /transitions/0/from: bad placement: ", 0), 0u) << parse_err;
  const std::string dim_err = config_error(
      with("transitions", {{{"mesh", "2x2"}, {"from", "R,R"}, {"to", "S(2),R"}}}));
  EXPECT_EQ(dim_err.rfind("x.json: /transitions/0/to: bad placement \"S(2),R\" on mesh 2x2 for a 1x2 "
                          "tensor: ", 0), 0u) << dim_err;
  const std::string count_err = config_error(
      with("transitions", {{{"mesh", "2x2"}, {"from", "S(0)"}, {"to", "R,R"}}}));
  EXPECT_EQ(count_err.rfind("x.json: /transitions/0/from: bad placement \"S(0)\" on mesh 2x2", 0), 0u)
      << count_err;
  const std::string sizes_err = config_error(
      with("transitions", {{{"mesh", "4"}, {"from", "S(0)[1,1,1,1]"}, {"to", "R"}}}));
  EXPECT_EQ(sizes_err.rfind("x.json: /transitions/0/from: bad placement \"S(0)[1,1,1,1]\" on mesh 4", 0), 0u)
      << sizes_err;
  EXPECT_EQ(config_error(with("transitions", {{{"mesh", "2x4"}, {"from", "R,R"}, {"to", "R,R"}}})),
            "x.json: /transitions/0/mesh: mesh \"2x4\" has 8 ranks but the world has 4");
  EXPECT_EQ(config_error(with("transitions", "all")),
            "x.json: /transitions: unknown value \"all\"; expected \"all_single_dim\" or a list of "
            "{\"mesh\", \"from\", \"to\"}");
}

TEST(SweepConfig, UnknownKeysDTypesDistributionsModes) {
  EXPECT_EQ(config_error(with("iteratons", 5)).rfind("x.json: /iteratons: unknown key \"iteratons\"; expected one of name, meshes,", 0), 0u);
  EXPECT_NE(config_error(with("dtypes", {"f32", "float"})).find("x.json: /dtypes/1: "), std::string::npos);
  EXPECT_EQ(config_error(with("dtypes", {"f32", "f32"})), "x.json: /dtypes/1: duplicate dtype \"f32\"");
  EXPECT_EQ(config_error(with("distributions", {"even", "zipf"})),
            "x.json: /distributions/1: bad distribution \"zipf\": zipf needs a parameter; expected one of "
            "even, chunk, linear(R) with R >= 1, zipf(S) with S > 0, one_empty, random(SEED)");
  EXPECT_EQ(config_error(with("distributions", {"zipf(-1)"})).rfind(
                "x.json: /distributions/0: bad distribution \"zipf(-1)\": the zipf exponent must be > 0", 0), 0u);
  EXPECT_EQ(config_error(with("distributions", {{{"kind", "random"}}})),
            "x.json: /distributions/0/seed: missing; random needs \"seed\"");
  EXPECT_EQ(config_error(with("mode", "pipelind")),
            "x.json: /mode: unknown mode \"pipelind\"; expected per_iteration or pipelined");
  EXPECT_EQ(config_error(with("iterations", {{"min", 50}, {"max", 10}})),
            "x.json: /iterations: min (50) is greater than max (10); swap them");
  EXPECT_EQ(config_error(with("check", "yes")), "x.json: /check: expected true or false, got \"yes\"");
  EXPECT_EQ(config_error(with("time_budget_s", 0)),
            "x.json: /time_budget_s: value 0 is out of range; expected 0 < value <= 1000000");
}

TEST(SweepConfig, StructuralErrors) {
  EXPECT_EQ(config_error("[1,2]"), "x.json: /: the config must be a JSON object, got an array");
  EXPECT_EQ(config_error(R"({"meshes": ["4"], "sizes": [8]})"),
            "x.json: /: nothing to run: give \"collectives\" and/or \"transitions\"");
  EXPECT_EQ(config_error("{\"meshes\": [\"4\"],\n  \"sizes\": [8,]}"),
            "x.json: line 2, column 15: invalid JSON: syntax error while parsing value - unexpected ']'; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(config_error(with("collectives", {{{"op", "all_gather"}, {"dims", {2}}}})),
            "x.json: /collectives/0: collective \"all_gather\" selects no mesh dim of size >= 2 on any "
            "configured mesh; check \"dims\" against the meshes");
  EXPECT_EQ(error_of([] { (void)load_config("/nonexistent/cfg.json"); }),
            "/nonexistent/cfg.json: cannot open the sweep config (No such file or directory); does "
            "the file exist? configs/local.json is the default quick sweep");
}

TEST(SweepConfig, ExpandsMeshesDimsAndSkipsDistributionsForSingleBufferOps) {
  auto j = base();
  j["collectives"] = {"all_gather", "all_reduce"};
  j["distributions"] = {"even", "zipf(1.5)"};
  j["sizes"] = {8, 64};
  const auto pts = expand_points(parse_config(j, "x.json"), 4);
  // all_gather: (mesh 4 dim 0, 2x2 dim 0, 2x2 dim 1) x 2 distributions x 2 sizes = 12;
  // all_reduce: 3 dims x 1 (no distribution) x 2 sizes = 6.
  EXPECT_EQ(pts.size(), 18u);
  std::set<std::string> keys;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    EXPECT_EQ(pts[i].index, i);
    keys.insert(pts[i].key());
    if (pts[i].op == Collective::AllReduce) {
      EXPECT_EQ(pts[i].dist.name(), "even");
    }
  }
  EXPECT_EQ(keys.size(), pts.size());
  EXPECT_EQ(pts[0].key(),
            R"({"distribution":"even","dtype":"f32","kind":"collective","mesh":"4","mesh_dim":0,"mode":"per_iteration","op":"all_gather",)"
            R"("protocol":{"buffer_rotation":{"bytes":33554432,"max_slots":1024},"mode":"per_iteration",)"
            R"("ops_per_sample":1,"timing_loop":3,"warmup":5},"size":8})");
}

TEST(SweepConfig, FactorizationsAndAllSingleDimTransitions) {
  auto j = base();
  j["meshes"] = {{"factorizations", true}, {"max_dims", 3}};
  j["transitions"] = "all_single_dim";
  j["sizes"] = {4096};
  const auto cfg = parse_config(j, "x.json");
  EXPECT_EQ(resolve_meshes(cfg, 8), (std::vector<std::string>{"8", "2x4", "4x2", "2x2x2"}));
  EXPECT_EQ(resolve_meshes(cfg, 1), (std::vector<std::string>{"1"}));
  const auto pts = expand_points(cfg, 4);  // meshes 4, 2x2
  std::size_t transitions = 0;
  for (const auto& p : pts) transitions += p.transition ? 1 : 0;
  EXPECT_EQ(transitions, 12u * (1 + 2));  // 12 ordered pairs of {S(0),S(1),R,P} per mesh dim
}

TEST(SweepConfig, TransitionsOnAllMeshesRunWhereThePlacementsFit) {
  auto j = base();
  j["meshes"] = {{"factorizations", true}, {"max_dims", 2}};
  j["transitions"] = {{{"mesh", "all"}, {"from", "S(0),R"}, {"to", "R,R"}},
                      {{"mesh", "all"}, {"from", "S(0)"}, {"to", "R"}}};
  j["sizes"] = {64};
  std::vector<std::string> on;
  for (const auto& p : expand_points(parse_config(j, "x.json"), 8))
    if (p.transition) on.push_back(p.mesh + " " + p.from_given);
  EXPECT_EQ(on, (std::vector<std::string>{"2x4 S(0),R", "4x2 S(0),R", "8 S(0)"}));
  j["meshes"] = {"4"};
  EXPECT_EQ(config_error(j.dump()),
            "x.json: /transitions/0/from: \"S(0),R\" has 2 placements but no configured mesh has 2 "
            "dims (meshes: 4)");
}

TEST(SweepConfig, TransitionDistributionsBecomeExplicitSizes) {
  auto j = base();
  j.erase("collectives");
  j["transitions"] = {{{"mesh", "4"}, {"from", "S(0)"}, {"to", "S(1)"}},
                      {{"mesh", "2x2"}, {"from", "S(0),S(0)"}, {"to", "R,R"}}};
  j["transition_distributions"] = {"one_empty"};
  j["sizes"] = {400};  // 100 f32 -> 10x10
  const auto pts = expand_points(parse_config(j, "x.json"), 4);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].shape, (shardcal::Shape{10, 10}));
  EXPECT_EQ(pts[0].from, "S(0)[4,3,3,0]");
  EXPECT_EQ(pts[0].to, "S(1)[4,3,3,0]");
  EXPECT_EQ(pts[1].from, "S(0),S(0)");  // nested sharding keeps chunk sizes
}

TEST(SweepConfig, HashIsCanonical) {
  const auto a = parse_config_text(R"({"sizes": [8], "meshes": ["4"], "collectives": ["gather"]})", "a");
  const auto b = parse_config_text(R"({"collectives": ["gather"], "meshes": ["4"], "sizes": [8]})", "b");
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.hash().size(), 16u);
}

TEST(Distribution, SplitsSumToTheTotal) {
  for (const char* text : {"chunk", "linear(4)", "zipf(1.1)", "one_empty", "random(42)"}) {
    const auto d = Distribution::parse(text);
    EXPECT_EQ(d.name(), text);
    for (int n : {1, 2, 3, 4, 7, 16})
      for (std::int64_t total : {0, 1, 5, 100, 1000003}) {
        const auto c = d.split(total, n);
        ASSERT_EQ(c.size(), std::size_t(n));
        std::int64_t s = 0;
        for (auto x : c) {
          EXPECT_GE(x, 0);
          s += x;
        }
        EXPECT_EQ(s, total) << text << " n=" << n;
      }
  }
  EXPECT_EQ(Distribution::parse("chunk").split(10, 4), (std::vector<std::int64_t>{3, 3, 3, 1}));
  EXPECT_EQ(Distribution::parse("chunk").split(5, 4), (std::vector<std::int64_t>{2, 2, 1, 0}));
  EXPECT_EQ(Distribution::parse("linear(4)").split(100, 4), (std::vector<std::int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(Distribution::parse("zipf(1)").split(100, 4), (std::vector<std::int64_t>{48, 24, 16, 12}));
  EXPECT_EQ(Distribution::parse("one_empty").split(9, 4), (std::vector<std::int64_t>{3, 3, 3, 0}));
  EXPECT_EQ(Distribution::parse("even").split(10, 4), (std::vector<std::int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(Distribution::parse("random(1)").split(1000, 4), Distribution::parse("random(1)").split(1000, 4));
  EXPECT_NE(Distribution::parse("random(1)").split(1000, 4), Distribution::parse("random(2)").split(1000, 4));
}

TEST(CollectiveShape, BytesFollowTheTable) {
  const auto even = Distribution::parse("even");
  const auto ag = collective_shape(Collective::AllGather, shardcal::DType::F32, 4096, even, 4);
  EXPECT_TRUE(ag.uniform);
  EXPECT_EQ(ag.counts, (std::vector<std::int64_t>{256, 256, 256, 256}));
  EXPECT_EQ(ag.bytes, 4096);  // whole output
  const auto ar = collective_shape(Collective::AllReduce, shardcal::DType::F32, 4096, even, 4);
  EXPECT_EQ(ar.bytes, 4096);  // one rank's buffer
  const auto z = collective_shape(Collective::ReduceScatter, shardcal::DType::BF16, 200,
                                  Distribution::parse("one_empty"), 4);
  EXPECT_FALSE(z.uniform);
  EXPECT_EQ(z.counts, (std::vector<std::int64_t>{34, 33, 33, 0}));
  EXPECT_EQ(z.bytes_total, 200);
  EXPECT_EQ(z.bytes_max_rank, 68);
  EXPECT_EQ(z.bytes_eff, 4 * 68);
  // Tiny sizes still move one element per rank in the even form.
  EXPECT_EQ(collective_shape(Collective::AllGather, shardcal::DType::F64, 8, even, 4).bytes, 32);
}

// Results format 2: a transition's key holds its canonical placements (parse + reprint), so
// spacing in the config does not create a different point; the user's text stays in from_given.
TEST(PointKey, TransitionsAreKeyedByCanonicalPlacements) {
  auto points_for = [](const char* from, const char* to) {
    auto j = base();
    j.erase("collectives");
    j["transitions"] = {{{"mesh", "2x2"}, {"from", from}, {"to", to}}};
    j["sizes"] = {64};
    return expand_points(parse_config(j, "x.json"), 4);
  };
  const auto a = points_for("S(0), R", "R ,R");
  const auto b = points_for("S(0),R", "R,R");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].key(), b[0].key());
  EXPECT_EQ(a[0].params()["from"], "S(0),R");
  EXPECT_EQ(a[0].params()["to"], "R,R");
  EXPECT_EQ(a[0].from_given, "S(0), R");  // kept for the record
  EXPECT_EQ(b[0].from_given, "S(0),R");
  EXPECT_NE(a[0].key(), points_for("S(1),R", "R,R")[0].key());
  // Both spellings in one config are the same point twice: refused.
  auto j = base();
  j.erase("collectives");
  j["transitions"] = {{{"mesh", "2x2"}, {"from", "S(0), R"}, {"to", "R,R"}},
                      {{"mesh", "2x2"}, {"from", "S(0),R"}, {"to", "R,R"}}};
  EXPECT_NE(config_error(j.dump()).find("twice"), std::string::npos);
}

// The timing protocol is recorded per point and is part of its key: a comparison (or --resume)
// never matches points timed differently.
TEST(PointKey, TheTimingProtocolIsPartOfTheKey) {
  auto first = [](const nlohmann::json& j) { return expand_points(parse_config(j, "x.json"), 4).at(0); };
  auto j = base();
  j["meshes"] = {"4"};
  j["sizes"] = {64};
  const Point p = first(j);
  const auto proto = p.params().at("protocol");
  EXPECT_EQ(proto.at("mode"), "per_iteration");
  EXPECT_EQ(proto.at("ops_per_sample"), 1);
  EXPECT_EQ(proto.at("timing_loop"), kTimingLoopVersion);
  EXPECT_TRUE(proto.at("warmup").is_number_integer());
  EXPECT_TRUE(proto.at("buffer_rotation").at("bytes").is_number_integer());
  for (const auto& [key, value] : std::vector<std::pair<const char*, nlohmann::json>>{
           {"warmup", 17}, {"buffer_rotation", {{"bytes", 4096}}}}) {
    auto k = j;
    k[key] = value;
    EXPECT_NE(first(k).key(), p.key()) << key;
  }
  auto piped = j;
  piped["mode"] = "pipelined";
  piped["pipeline_depth"] = 3;
  const Point q = first(piped);
  EXPECT_EQ(q.params().at("protocol").at("ops_per_sample"), 3);
  piped["pipeline_depth"] = 4;
  EXPECT_NE(first(piped).key(), q.key());
}

// A window start (docs/RESULTS_FORMAT.md "Starting a sample") is part of the key; a barrier start adds
// nothing, so keys of files swept before the option existed still match.
TEST(PointKey, AWindowStartIsPartOfTheKeyABarrierStartIsNot) {
  auto first = [](const nlohmann::json& j) { return expand_points(parse_config(j, "x.json"), 4).at(0); };
  auto j = base();
  j["meshes"] = {"4"};
  j["sizes"] = {64};
  const Point plain = first(j);
  EXPECT_FALSE(plain.params().at("protocol").contains("start"));
  auto b = j;
  b["start"] = "barrier";
  EXPECT_EQ(first(b).key(), plain.key());
  auto w = j;
  w["start"] = "window";
  const Point win = first(w);
  EXPECT_NE(win.key(), plain.key());
  EXPECT_EQ(win.params().at("protocol").at("start"), nlohmann::json({{"kind", "window"}, {"retry", 1}}));
  // The window is a tuning, recorded in timing.start: a wider one still resumes the file.
  w["start_window_us"] = 250;
  EXPECT_EQ(first(w).key(), win.key());
}

TEST(Config, StartIsBarrierOrWindowAndItsWindowNeedsWindow) {
  auto j = base();
  j["start"] = "now";
  const std::string bad = config_error(j.dump());
  EXPECT_NE(bad.find("/start"), std::string::npos) << bad;
  EXPECT_NE(bad.find("\"window\""), std::string::npos) << bad;
  auto k = base();
  k["start_window_us"] = 50;
  const std::string lone = config_error(k.dump());
  EXPECT_NE(lone.find("/start_window_us"), std::string::npos) << lone;
  EXPECT_NE(lone.find("only with"), std::string::npos) << lone;
  auto z = base();
  z["start"] = "window";
  z["start_window_us"] = 0;
  EXPECT_NE(config_error(z.dump()).find("/start_window_us"), std::string::npos);
}
