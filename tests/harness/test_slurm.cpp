// Slurm support of the sweep: SLURM_* parsing, the topology cross-check, the
// resume-on-new-hosts rule (pure functions), and run_sweep_rank on 8 simulator ranks with fake
// SLURM_* environments. tests/slurm/fake_env_test.sh runs the same under mpirun with 2 "hosts"
// (SHARDCAL_HOSTNAME per rank), which the simulator (one process, one environment) cannot.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "shardcal/error.hpp"
#include "shardcal/formats/results_writer.hpp"
#include "spmd.hpp"
#include "sweep/slurm_env.hpp"
#include "sweep/sweep.hpp"

using namespace shardbench::sweep;
using namespace shardcal::formats;
using nlohmann::json;

namespace {

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    const auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

shardcal::Topology hosts_of(const std::vector<int>& per_host, const std::string& prefix = "node") {
  shardcal::Topology t;
  for (std::size_t h = 0; h < per_host.size(); ++h)
    for (int k = 0; k < per_host[h]; ++k) {
      t.host_of_rank.push_back(int(h));
      t.hostnames.push_back(prefix + std::to_string(h));
      t.max_ranks_per_host = std::max(t.max_ranks_per_host, per_host[h]);
    }
  t.num_hosts = int(per_host.size());
  return t;
}

TEST(SlurmEnv, TasksPerNodeExpandsSlurmsCompressedForm) {
  EXPECT_EQ(parse_tasks_per_node("4", "V"), std::vector<int>{4});
  EXPECT_EQ(parse_tasks_per_node("4(x2)", "V"), (std::vector<int>{4, 4}));
  EXPECT_EQ(parse_tasks_per_node("2(x3),1", "V"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(parse_tasks_per_node("1,8(x2),3", "V"), (std::vector<int>{1, 8, 8, 3}));
  for (const char* bad : {"", "x", "4(x)", "4(2)", "4(x2", "0", "4,,2", "-1", "4(x0)", "4 "}) {
    try {
      parse_tasks_per_node(bad, "SLURM_TASKS_PER_NODE");
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const shardcal::Error& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM_TASKS_PER_NODE=\""), std::string::npos) << e.what();
    }
  }
}

TEST(SlurmEnv, StepVariablesWinOverTheJobsAndNoneMeansNotUnderSlurm) {
  EXPECT_FALSE(read_slurm_env(fake_env({})).present);
  const SlurmStep job = read_slurm_env(fake_env({{"SLURM_JOB_ID", "42"}, {"SLURM_NTASKS", "8"},
                                                 {"SLURM_JOB_NUM_NODES", "2"},
                                                 {"SLURM_TASKS_PER_NODE", "4(x2)"}}));
  EXPECT_TRUE(job.present);
  EXPECT_EQ(job.source, "job");
  EXPECT_EQ(job.job_id, "42");
  EXPECT_EQ(job.num_nodes, 2);
  EXPECT_EQ(job.tasks_per_node, (std::vector<int>{4, 4}));
  const SlurmStep step = read_slurm_env(fake_env(
      {{"SLURM_NTASKS", "8"}, {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_TASKS_PER_NODE", "4(x2)"},
       {"SLURM_STEP_NUM_TASKS", "3"}, {"SLURM_STEP_NUM_NODES", "2"},
       {"SLURM_STEP_TASKS_PER_NODE", "2,1"}}));
  EXPECT_EQ(step.source, "step");
  EXPECT_EQ(step.num_tasks, 3);
  EXPECT_EQ(step.tasks_per_node, (std::vector<int>{2, 1}));
  // Inconsistent or incomplete variables are errors naming them.
  EXPECT_THROW(read_slurm_env(fake_env({{"SLURM_NTASKS", "8"}, {"SLURM_JOB_NUM_NODES", "2"},
                                        {"SLURM_TASKS_PER_NODE", "4"}})),
               shardcal::Error);
  try {
    read_slurm_env(fake_env({{"SLURM_STEP_NUM_TASKS", "8"}}));
    ADD_FAILURE() << "accepted a step without node variables";
  } catch (const shardcal::Error& e) {
    EXPECT_NE(std::string(e.what()).find("SLURM_STEP_NUM_NODES is not"), std::string::npos) << e.what();
  }
}

TEST(SlurmEnv, TopologyCrossCheck) {
  const SlurmStep two_by_four = read_slurm_env(fake_env(
      {{"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}}));
  EXPECT_EQ(slurm_topology_mismatch(two_by_four, 8, hosts_of({4, 4})), "");
  EXPECT_EQ(slurm_topology_mismatch(SlurmStep{}, 8, hosts_of({8})), "");  // not under Slurm
  // All ranks report one hostname (containers): mismatch, with the fix.
  const std::string one = slurm_topology_mismatch(two_by_four, 8, hosts_of({8}));
  EXPECT_NE(one.find("Slurm says 2 node(s) with [4,4] task(s)"), std::string::npos) << one;
  EXPECT_NE(one.find("found 1 host(s) with [8] rank(s) (node0: 8)"), std::string::npos) << one;
  EXPECT_NE(one.find("SHARDCAL_HOSTNAME"), std::string::npos) << one;
  // Same host count, other split.
  EXPECT_NE(slurm_topology_mismatch(two_by_four, 8, hosts_of({6, 2})), "");
  // Uneven Slurm layouts compare as a multiset (hosts are numbered by their first rank).
  const SlurmStep uneven = read_slurm_env(fake_env(
      {{"SLURM_STEP_NUM_TASKS", "5"}, {"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "2,3"}}));
  EXPECT_EQ(slurm_topology_mismatch(uneven, 5, hosts_of({3, 2})), "");
  // Each task its own world of 1: srun without an MPI plugin.
  const std::string single = slurm_topology_mismatch(two_by_four, 1, hosts_of({1}));
  EXPECT_NE(single.find("each task started its own MPI world"), std::string::npos) << single;
  EXPECT_NE(single.find("--mpi=pmix"), std::string::npos) << single;
  // Another launcher with another rank count (mpirun -np 4 in an 8-task allocation): not checked.
  EXPECT_EQ(slurm_topology_mismatch(two_by_four, 4, hosts_of({4})), "");
}

json ctx_with_hosts(const std::vector<std::pair<std::string, std::vector<int>>>& hosts) {
  json hs = json::array();
  std::vector<int> per;
  for (const auto& [name, ranks] : hosts) {
    hs.push_back({{"name", name}, {"ranks", ranks}});
    per.push_back(int(ranks.size()));
  }
  return {{"hosts", hs}, {"n_hosts", hosts.size()}, {"ranks_per_host", per},
          {"shardcal_version", "1"}, {"git_revision", "abc"}, {"git_dirty", false},
          {"library_versions", json::object()}};
}

TEST(ResumeOnNewHosts, SameShapeIsComparableAndTheRenamesAreListed) {
  const json before = ctx_with_hosts({{"a1", {0, 1, 2, 3}}, {"a2", {4, 5, 6, 7}}});
  const json after = ctx_with_hosts({{"b7", {0, 1, 2, 3}}, {"b9", {4, 5, 6, 7}}});
  EXPECT_TRUE(context_differences(before, after).empty());
  EXPECT_EQ(host_renames(before, after),
            (std::vector<std::string>{"host 0: \"a1\" -> \"b7\"", "host 1: \"a2\" -> \"b9\""}));
  EXPECT_TRUE(host_renames(before, before).empty());
}

TEST(ResumeOnNewHosts, AnotherShapeIsRefused) {
  const json before = ctx_with_hosts({{"a1", {0, 1, 2, 3}}, {"a2", {4, 5, 6, 7}}});
  // 4 hosts x 2 ranks.
  const json four = ctx_with_hosts({{"b1", {0, 1}}, {"b2", {2, 3}}, {"b3", {4, 5}}, {"b4", {6, 7}}});
  const auto d = context_differences(before, four);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].rfind("hosts (ranks per host): file ", 0), 0u) << d[0];
  // Same counts, other ranks per host (cyclic placement): also another shape.
  const json cyclic = ctx_with_hosts({{"b1", {0, 2, 4, 6}}, {"b2", {1, 3, 5, 7}}});
  EXPECT_FALSE(context_differences(before, cyclic).empty());
}

// run_sweep_rank on 8 simulator ranks (one process: one host) under fake SLURM_* variables.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars) {
    for (const auto& [k, v] : vars) {
      names_.push_back(k);
      setenv(k.c_str(), v.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& k : names_) unsetenv(k.c_str());
  }

 private:
  std::vector<std::string> names_;
};

std::string run_sim_sweep(const std::string& out) {
  SweepJob job;
  job.config = parse_config_text(R"({"name": "slurm-unit", "meshes": ["8"],
      "collectives": ["all_reduce"], "sizes": [64], "dtypes": ["f32"], "distributions": ["even"],
      "warmup": 0, "iterations": {"min": 2, "max": 2}, "check": true,
      "buffer_rotation": {"bytes": 0}})", "inline");
  job.out_path = out;
  job.quiet = true;
  std::string error;
  std::mutex mu;
  shardcal::testing::run_spmd(8, [&](shardcal::Communicator& world) {
    try {
      run_sweep_rank(world, job);
    } catch (const InputError& e) {
      std::lock_guard<std::mutex> lk(mu);
      if (world.rank() == 0) error = e.what();
    }
  });
  return error;
}

TEST(SlurmSweep, EightSimRanksAgainstFakeSlurmEnvironments) {
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("shardcal_slurm_unit_" + std::to_string(::getpid()) + ".jsonl")).string();
  {
    ScopedEnv env({{"SLURM_JOB_ID", "77"}, {"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_STEP_NUM_NODES", "1"},
                   {"SLURM_STEP_TASKS_PER_NODE", "8"}, {"SHARDCAL_HOSTNAME", "fake-node"}});
    EXPECT_EQ(run_sim_sweep(out), "");
    std::ifstream in(out);
    std::string first;
    std::getline(in, first);
    const json ctx = json::parse(first);
    EXPECT_EQ(ctx["slurm"]["job_id"], "77");
    EXPECT_EQ(ctx["slurm"]["tasks_per_node"], json::array({8}));
    EXPECT_EQ(ctx["hosts"][0]["name"], "fake-node");
  }
  {
    ScopedEnv env({{"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_STEP_NUM_NODES", "2"},
                   {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}});
    std::filesystem::remove(out);
    const std::string e = run_sim_sweep(out);
    EXPECT_NE(e.find("topology mismatch: Slurm says 2 node(s)"), std::string::npos) << e;
    EXPECT_FALSE(std::filesystem::exists(out)) << "no results file may be created on a mismatch";
  }
  std::filesystem::remove(out);
}

}  // namespace
