// Input agreement across ranks (agree_on_input, check_same_job) and the --resume reader: malformed
// files are input errors naming file and line (never an internal json error), several context
// records are accepted, and context differences are listed field by field.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "shardcal/error.hpp"
#include "shardcal/formats/results_writer.hpp"
#include "spmd.hpp"
#include "sweep/sweep.hpp"

using namespace shardbench::sweep;
using namespace shardcal::formats;
using nlohmann::json;
using shardcal::Communicator;

namespace {

// Runs `body` on every rank of a 4-rank world and returns the InputError text of each rank
// ("" where none was thrown).
std::vector<std::string> input_errors(const std::function<void(Communicator&)>& body) {
  std::vector<std::string> out(4);
  std::mutex mu;
  shardcal::testing::run_spmd(4, [&](Communicator& world) {
    std::string text;
    try {
      body(world);
    } catch (const InputError& e) {
      text = e.what();
    }
    std::lock_guard<std::mutex> lk(mu);
    out[std::size_t(world.rank())] = text;
  });
  return out;
}

class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    path_ =
        (std::filesystem::temp_directory_path() /
         ("shardcal_resume_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
          "_" + std::to_string(counter_++) + ".jsonl"))
            .string();
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

json context(const std::string& hash = "00000000000000aa") {
  return {{"type", "context"},
          {"version", kResultsVersion},
          {"config_hash", hash},
          {"backend", "sim"},
          {"world", 4},
          {"hosts", json::array({{{"name", "h0"}, {"ranks", {0, 1, 2, 3}}}})},
          {"n_hosts", 1},
          {"ranks_per_host", {4}},
          {"library_versions", {{"MPI", "Open MPI v4.1.4"}}},
          {"shardcal_version", "0.1.0"},
          {"git_revision", "abc123"}};
}

std::string line(const json& j) { return j.dump() + "\n"; }

// The Error text read_for_resume throws for `content`; fails the test if none or a non-Error.
std::string resume_error(const std::string& content) {
  TempFile f(content);
  try {
    read_for_resume(f.path(), "00000000000000aa", "sim", 4);
  } catch (const shardcal::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a shardcal::Error (would be an internal error): " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error for " << content;
  return "";
}

}  // namespace

TEST(AgreeOnInput, NoErrorAnywhereReturns) {
  for (const auto& e : input_errors([](Communicator& w) { agree_on_input(w, ""); }))
    EXPECT_EQ(e, "");
}

TEST(AgreeOnInput, TheSameErrorEverywhereIsKeptAsIs) {
  for (const auto& e : input_errors([](Communicator& w) { agree_on_input(w, "x.json: bad"); }))
    EXPECT_EQ(e, "x.json: bad");
}

TEST(AgreeOnInput, AnErrorOnSomeRanksFailsEveryRankNamingThem) {
  const auto errs = input_errors([](Communicator& w) {
    agree_on_input(w, w.rank() == 0 ? "" : w.rank() == 2 ? "b.json: missing" : "a.json: missing");
  });
  const std::string expect =
      "input error on some ranks only (every rank must be given the same, valid input): "
      "ranks 1,3: a.json: missing; rank 2: b.json: missing; rank 0: no error";
  for (const auto& e : errs) EXPECT_EQ(e, expect);
}

TEST(CheckSameJob, DifferentConfigsFailEveryRankWithOneMessage) {
  const auto errs = input_errors([](Communicator& w) {
    const std::string h = w.rank() == 2 ? "00000000000000bb" : "00000000000000aa";
    check_same_job(w, h, "--out", "config c.json (hash " + h + "), --out");
  });
  for (const auto& e : errs) {
    EXPECT_EQ(e, errs[0]);
    EXPECT_NE(e.find("ranks 0,1,3 have spec A: config c.json (hash 00000000000000aa), --out"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("rank 2 has spec B: config c.json (hash 00000000000000bb)"), std::string::npos)
        << e;
  }
}

TEST(CheckSameJob, DifferentModesFailEveryRank) {
  const auto errs = input_errors([](Communicator& w) {
    const std::string mode = w.rank() == 0 ? "--resume" : "--out";
    check_same_job(w, "00000000000000aa", mode, "config c.json, " + mode);
  });
  for (const auto& e : errs)
    EXPECT_NE(e.find("rank 0 has spec A: config c.json, --resume"), std::string::npos) << e;
}

TEST(ReadForResume, MalformedRecordsAreInputErrorsNamingTheLine) {
  EXPECT_NE(resume_error("42\n").find(": line 1: the record is a number, not a JSON object"),
            std::string::npos);
  EXPECT_NE(resume_error("{\"type\":\"context\",\"config_hash\":5}\n")
                .find(": line 1: /config_hash: expected a string, got a number (5)"),
            std::string::npos);
  EXPECT_NE(resume_error("{\"type\":7}\n").find(": line 1: /type: expected a string, got a number (7)"),
            std::string::npos);
  EXPECT_NE(resume_error(line(context()) + "[1,2]\n" + line(context()))
                .find(": line 2: the record is an array"),
            std::string::npos);
  EXPECT_NE(resume_error(line(context()) + "{\"type\":\"point\",\"key\":5}\n")
                .find(": line 2: /key: expected a string, got a number (5)"),
            std::string::npos);
  json bad_world = context();
  bad_world["world"] = "4";
  EXPECT_NE(resume_error(line(bad_world))
                .find(": line 1: /world: expected an integer, got a string (\"4\")"),
            std::string::npos);
  // Config, backend and world are checked in every context record, not only the first.
  EXPECT_NE(resume_error(line(context()) + line(context("00000000000000bb")))
                .find("produced by a different config"),
            std::string::npos);
}

TEST(ReadForResume, SeveralContextRecordsAndTheLastOneCounts) {
  json second = context();
  second["git_revision"] = "def456";
  const json p1 = {{"type", "point"}, {"key", "k1"}}, p2 = {{"type", "point"}, {"key", "k2"}};
  TempFile f(line(context()) + line(p1) + line(second) + line(p2) + "{\"type\":\"po");
  const ResumeState st = read_for_resume(f.path(), "00000000000000aa", "sim", 4);
  EXPECT_EQ(st.contexts, 2u);
  EXPECT_EQ(st.context["git_revision"], "def456");
  EXPECT_EQ(st.done_keys, (std::set<std::string>{"k1", "k2"}));
  EXPECT_TRUE(st.dropped_partial);
  EXPECT_EQ(st.records, 4u);
}

TEST(ContextDifferences, ListsEachDifferingField) {
  EXPECT_TRUE(context_differences(context(), context()).empty());
  json other = context();
  other["git_revision"] = "def456";
  other["library_versions"]["MPI"] = "MPICH 4.0";
  other["library_versions"]["NCCL"] = "2.18";
  other["hosts"][0]["ranks"] = {0, 1, 2};  // another shape (a renamed host alone is not one)
  other["date"] = "2030-01-01T00:00:00Z";  // not compared
  const auto d = context_differences(context(), other);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0],
            "hosts (ranks per host): file [{\"name\":\"h0\",\"ranks\":[0,1,2,3]}], this run "
            "[{\"name\":\"h0\",\"ranks\":[0,1,2]}]");
  EXPECT_EQ(d[1], "git_revision: file \"abc123\", this run \"def456\"");
  EXPECT_EQ(d[2], "library_versions.MPI: file \"Open MPI v4.1.4\", this run \"MPICH 4.0\"");
  EXPECT_EQ(d[3], "library_versions.NCCL: file null, this run \"2.18\"");
}

// A simulated file and a run on another platform (or a real run) hold incomparable points.
TEST(ContextDifferences, SimulationIsPartOfTheContext) {
  json sim = context();
  sim["simulation"] = {{"platform_sha256", "aa"}, {"np", 16}, {"cfg", "smpi/coll-selector:ompi"}};
  EXPECT_TRUE(context_differences(sim, sim).empty());
  json other = sim;
  other["simulation"]["platform_sha256"] = "bb";
  other["simulation"]["np"] = 64;
  auto d = context_differences(sim, other);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], "simulation.np: file 16, this run 64");
  EXPECT_EQ(d[1], "simulation.platform_sha256: file \"aa\", this run \"bb\"");
  d = context_differences(sim, context());  // resumed by a real (not simulated) run
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rfind("simulation: file {", 0), 0u) << d[0];
  EXPECT_NE(d[0].find("this run null"), std::string::npos) << d[0];
}

// Format 1 files (placement text as written in keys, no timing protocol) cannot be matched to
// this run's keys: --resume refuses, saying why and what to do.
TEST(ReadForResume, OlderFormatVersionsAreRefusedWithTheReason) {
  for (const json& version : {json(1), json(nullptr), json("2")}) {
    json ctx = context();
    if (version.is_null()) ctx.erase("version");
    else ctx["version"] = version;
    const std::string e = resume_error(line(ctx));
    EXPECT_NE(e.find("results format version " + (version.is_null() ? std::string("none") : version.dump())),
              std::string::npos) << e;
    EXPECT_NE(e.find("this shardbench writes version " + std::to_string(kResultsVersion)), std::string::npos) << e;
    EXPECT_NE(e.find("start a new sweep with --out"), std::string::npos) << e;
  }
  TempFile ok(line(context()));
  EXPECT_NO_THROW(read_for_resume(ok.path(), "00000000000000aa", "sim", 4));
}
