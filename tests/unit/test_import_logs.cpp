// The benchmark-log parsers of `shardbench import` (formats/import_logs.hpp): the development
// logs (tests/data/realdata, public logs), older nccl-tests layouts and OSU's -f columns.
// End-to-end behaviour (records, exit codes, damaged copies) is tests/cli/import_checks.py.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "shardcal/error.hpp"
#include "shardcal/formats/import_logs.hpp"

namespace {

using namespace shardcal;
using namespace shardcal::formats;

std::string read(const std::string& rel) {
  std::ifstream in(std::string(SHARDCAL_SOURCE_DIR) + "/tests/data/" + rel, std::ios::binary);
  EXPECT_TRUE(in) << rel;
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::string error_of(const std::string& text, LogFormat f = LogFormat::Auto) {
  try {
    (void)parse_log(text, "x.log", f);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ImportLogs, NcclTestsDevLogs) {
  struct Case {
    const char* file;
    Collective op;
    std::size_t ranks, rows;
    int zero;
    const char* gpu;
  };
  const Case cases[] = {
      {"ncclt-all_gather-H100-1x8-1.txt", Collective::AllGather, 8, 54, 4, "NVIDIA H100 80GB HBM3"},
      {"ncclt-all_reduce-H100-1x8-1.txt", Collective::AllReduce, 8, 62, 0, "NVIDIA H100 80GB HBM3"},
      {"ncclt-all_reduce-H100-2x8-1.txt", Collective::AllReduce, 16, 62, 0,
       "NVIDIA H100 80GB HBM3"},
      {"ncclt-alltoall-RTX2080Ti-1x2-1.txt", Collective::AllToAll, 2, 52, 2,
       "NVIDIA GeForce RTX 2080 Ti"},
      {"ncclt-reduce_scatter-H100-1x8-1.txt", Collective::ReduceScatter, 8, 54, 4,
       "NVIDIA H100 80GB HBM3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const ParsedLog log =
        parse_log(read(std::string("realdata/") + c.file), c.file, LogFormat::Auto);
    EXPECT_EQ(log.format, LogFormat::NcclTests);
    ASSERT_TRUE(log.collective);
    EXPECT_EQ(*log.collective, c.op);
    EXPECT_EQ(log.ranks.size(), c.ranks);
    EXPECT_EQ(log.ranks.back().gpu, c.gpu);
    EXPECT_EQ(log.rows.size(), c.rows);
    EXPECT_EQ(log.skipped_zero, c.zero);
    EXPECT_EQ(log.skipped_truncated, 0);
    EXPECT_EQ(log.iters, 20);
    EXPECT_EQ(log.warmup, 5);
    EXPECT_EQ(log.rows.front().placement, "out_of_place");
    EXPECT_EQ(log.rows[1].placement, "in_place");
    EXPECT_EQ(log.rows.front().dtype, DType::F32);
  }
  const ParsedLog h100 =
      parse_log(read("realdata/ncclt-all_reduce-H100-1x8-1.txt"), "a", LogFormat::Auto);
  EXPECT_EQ(h100.tool_version, "2.17.9");
  EXPECT_EQ(h100.library_versions.at("NCCL"), "2.26.2");  // nccl-library=22602
  EXPECT_EQ(h100.rows.front().size, 8);
  EXPECT_DOUBLE_EQ(h100.rows.front().time_us, 35.58);
  EXPECT_DOUBLE_EQ(h100.rows[1].time_us, 34.90);
  EXPECT_EQ(h100.rows.front().wrong, 0.0);
  const ParsedLog two =
      parse_log(read("realdata/ncclt-all_reduce-H100-2x8-1.txt"), "b", LogFormat::Auto);
  EXPECT_EQ(two.ranks[8].host, "ztan-mig-gq73");
  EXPECT_NE(two.benchmark_from.find("inferred from the table"), std::string::npos)
      << two.benchmark_from;
  // In-place #wrong "N/A": not checked, recorded as unknown.
  const ParsedLog a2a =
      parse_log(read("realdata/ncclt-alltoall-RTX2080Ti-1x2-1.txt"), "c", LogFormat::Auto);
  EXPECT_FALSE(a2a.rows[1].wrong.has_value());
  EXPECT_EQ(a2a.command_line.substr(0, 10), "root@autod");
}

TEST(ImportLogs, SkippedBenchmarks) {
  const ParsedLog sr =
      parse_log(read("realdata/ncclt-sendrecv-A100PCIe-2x1-1.txt"), "s", LogFormat::Auto);
  EXPECT_FALSE(sr.collective);
  EXPECT_NE(sr.skip_reason.find("point-to-point"), std::string::npos);
  EXPECT_EQ(sr.library_versions.at("NCCL"), "2.16.5+cuda11.8");  // the NCCL version line wins
  // No program name; sum, count = size, busbw = algbw on 2 ranks: sendrecv or all_reduce.
  const ParsedLog amb =
      parse_log(read("realdata/ncclt-sendrecv-H100-2x1-1.txt"), "t", LogFormat::Auto);
  EXPECT_FALSE(amb.collective);
  EXPECT_NE(amb.skip_reason.find("--collective"), std::string::npos);
  // ... but only if it is all_reduce_perf's: the advice must not import a sendrecv log as all_reduce.
  EXPECT_TRUE(amb.sendrecv_lookalike);
  EXPECT_NE(amb.skip_reason.find("if it is all_reduce_perf's; a sendrecv_perf log is point-to-point"),
            std::string::npos)
      << amb.skip_reason;
  EXPECT_EQ(amb.rows.size(), 26u);
  const ParsedLog lat =
      parse_log(read("realdata/osu-latency-GH200-2x1-1.txt"), "u", LogFormat::Auto);
  EXPECT_FALSE(lat.collective);
  EXPECT_NE(lat.skip_reason.find("point-to-point"), std::string::npos);
  // --collective names what the log does not; it cannot rename what the log names.
  const ParsedLog forced = parse_log(read("realdata/ncclt-sendrecv-H100-2x1-1.txt"), "t",
                                     LogFormat::Auto, Collective::AllReduce);
  EXPECT_EQ(forced.collective, Collective::AllReduce);
  try {
    (void)parse_log(read("realdata/ncclt-all_gather-H100-1x8-1.txt"), "g", LogFormat::Auto,
                    Collective::AllReduce);
    FAIL() << "a contradicting --collective was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("measures all_gather"), std::string::npos) << e.what();
  }
}

TEST(ImportLogs, OsuCollective) {
  const ParsedLog osu =
      parse_log(read("realdata/osu-allreduce-A100-1x2-1.txt"), "o", LogFormat::Auto);
  ASSERT_EQ(osu.collective, Collective::AllReduce);
  EXPECT_EQ(osu.format, LogFormat::Osu);
  EXPECT_EQ(osu.tool_version, "5.9");
  EXPECT_EQ(osu.memory, "cuda");  // MPI-CUDA title
  EXPECT_EQ(osu.backend, "mpi");
  EXPECT_EQ(osu.rows.size(), 19u);  // the registration-cache warnings between rows are skipped
  EXPECT_EQ(osu.rows.front().dtype, DType::F32);  // OMB 5.9's allreduce sends MPI_FLOAT
  EXPECT_EQ(osu.rows.back().size, 1048576);
  EXPECT_DOUBLE_EQ(osu.rows.back().time_us, 630.67);
  EXPECT_TRUE(osu.ranks.empty());
  // OSU's allgather prints the per-rank block: the table's S is n blocks; its -f columns.
  const std::string ag =
      "# OSU MPI Allgather Latency Test v7.4\n# Datatype: MPI_CHAR.\n"
      "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
      "1                       2.50              2.10              2.90        1000\n"
      "2                       2.60              2.20              3.00        1000\n";
  const ParsedLog g = parse_log(ag, "ag", LogFormat::Auto);
  ASSERT_EQ(g.collective, Collective::AllGather);
  EXPECT_EQ(g.rows[1].dtype, DType::U8);
  EXPECT_EQ(table_bytes(g, g.rows[1], 4), 8);
  EXPECT_EQ(g.rows[0].min_us, 2.10);
  EXPECT_EQ(g.rows[0].max_us, 2.90);
  EXPECT_EQ(g.rows[0].iterations, 1000);
  EXPECT_EQ(g.memory, "host");
  EXPECT_EQ(table_bytes(osu, osu.rows[0], 2), 4);  // all_reduce: the buffer
}

TEST(ImportLogs, OlderNcclTestsLayouts) {
  // nccl-tests 2.0-era: no Group/Pid, no root column, the max-error column "error".
  const std::string old =
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 "
      "validation: 1\n"
      "#\n# Using devices\n"
      "#   Rank  0 on   node1 device  0 [0x3b] Tesla V100-SXM2-16GB\n"
      "#   Rank  1 on   node1 device  1 [0x5e] Tesla V100-SXM2-16GB\n"
      "#\n"
      "#                                                     out-of-place                       "
      "in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw "
      "  busbw  error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s) "
      " (GB/s)\n"
      "           8             2   float     sum    10.10    0.00    0.00  0e+00    10.20    0.00 "
      "   0.00  0e+00\n"
      "          16             4   float     sum    10.30    0.00    0.00  0e+00    10.40    0.00 "
      "   0.00  0e+00\n"
      "# Out of bounds values : 0 OK\n";
  const ParsedLog log = parse_log(old + "./build/all_reduce_perf -g 2\n", "old", LogFormat::Auto);
  ASSERT_EQ(log.collective, Collective::AllReduce);
  EXPECT_EQ(log.ranks.size(), 2u);
  EXPECT_EQ(log.ranks[1].gpu, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(log.rows.size(), 4u);
  EXPECT_FALSE(log.rows[0].root);
  EXPECT_FALSE(log.rows[0].wrong);  // "error" is a max error, not a count of wrong elements
  EXPECT_DOUBLE_EQ(log.rows[3].time_us, 10.40);
  // An unknown type is skipped and counted; the rest imports.
  std::string i8 = old;
  i8.replace(i8.find("float     sum    10.30"), 5, " int8");
  const ParsedLog skip = parse_log(i8, "i8", LogFormat::NcclTests, Collective::AllReduce);
  EXPECT_EQ(skip.skipped_dtype, 1);
  EXPECT_EQ(skip.rows.size(), 2u);
}

TEST(ImportLogs, LauncherTagsAndTypes) {
  using namespace import_detail;
  EXPECT_EQ(strip_launcher_tags("[1,0]<stdout>:#  Rank 0"), "#  Rank 0");
  EXPECT_EQ(strip_launcher_tags("[node1:12345] 8 2 float"), " 8 2 float");
  EXPECT_EQ(strip_launcher_tags("[a100-01.cluster:mpi_rank_0][dreg] x"), "[dreg] x");
  EXPECT_EQ(strip_launcher_tags("[0000:29:00] NVIDIA"), "[0000:29:00] NVIDIA");
  EXPECT_EQ(strip_launcher_tags("plain"), "plain");
  EXPECT_EQ(strip_launcher_tags("3: #  Rank 3"), "#  Rank 3");    // srun --label
  EXPECT_EQ(strip_launcher_tags("[3] #  Rank 3"), " #  Rank 3");  // mpiexec -prepend-rank
  EXPECT_EQ(strip_launcher_tags("  1024  256 float"), "  1024  256 float");
  EXPECT_EQ(nccl_type("bfloat16"), DType::BF16);
  EXPECT_EQ(nccl_type("half"), DType::F16);
  EXPECT_EQ(nccl_type("int32"), DType::I32);
  EXPECT_FALSE(nccl_type("fp8_e4m3"));
  std::string why;
  EXPECT_EQ(nccl_program("./build/alltoall_perf", why), Collective::AllToAll);
  EXPECT_FALSE(nccl_program("hypercube_perf", why));
  EXPECT_NE(why.find("hypercube_perf"), std::string::npos);
}

TEST(ImportLogs, BadInputNamesTheLine) {
  EXPECT_NE(error_of("just some text\n").find("x.log:1: not a benchmark log"), std::string::npos);
  EXPECT_NE(error_of("{\"version\": 3}", LogFormat::Auto).find("x.log:1: /config"),
            std::string::npos)
      << error_of("{\"version\": 3}");
  EXPECT_NE(
      error_of("# OSU MPI Allreduce Latency Test v7.4\n", LogFormat::Auto).find("no column header"),
      std::string::npos);
  EXPECT_NE(error_of("# nThread 1\n#  size count type redop root time algbw busbw #wrong\n")
                .find("x.log:2: the table has no rows"),
            std::string::npos);
  EXPECT_NE(error_of("x", LogFormat::NcclTests).find("no nccl-tests table header"),
            std::string::npos);
}

}  // namespace

// Issue 44: the launch line, the run's date, the table's candidates and the floor check.
namespace {

TEST(ImportLogs, LaunchLines) {
  using import_detail::parse_launch_line;
  auto srun = parse_launch_line("srun -N2 --ntasks-per-node=4 --mpi=pmix ./osu_allgather -m 8", 3);
  ASSERT_TRUE(srun);
  EXPECT_EQ(srun->line, 3);
  EXPECT_EQ(srun->hosts, 2);
  EXPECT_EQ(srun->ranks_per_host, 4);
  EXPECT_EQ(srun->ranks, 8);
  auto srun2 = parse_launch_line("$ srun --nodes 3 -n 12 -w a1,a2,a3 all_reduce_perf -b 8", 1);
  ASSERT_TRUE(srun2);
  EXPECT_EQ(srun2->hosts, 3);
  EXPECT_EQ(srun2->ranks_per_host, 4);
  EXPECT_EQ(srun2->host_names, (std::vector<std::string>{"a1", "a2", "a3"}));
  auto ompi = parse_launch_line("mpirun --allow-run-as-root -np 8 -H n1:4,n2:4 ./osu_alltoall", 1);
  ASSERT_TRUE(ompi);
  EXPECT_EQ(ompi->hosts, 2);
  EXPECT_EQ(ompi->ranks_per_host, 4);
  EXPECT_EQ(ompi->host_names, (std::vector<std::string>{"n1", "n2"}));
  auto ppn = parse_launch_line("mpiexec -n 16 -ppn 8 osu_allreduce", 1);
  ASSERT_TRUE(ppn);
  EXPECT_EQ(ppn->hosts, 2);
  auto npn = parse_launch_line("mpirun -np 8 -npernode 4 ./osu_allgather", 1);
  ASSERT_TRUE(npn);
  EXPECT_EQ(npn->ranks_per_host, 4);
  EXPECT_EQ(npn->hosts, 2);
  auto glued = parse_launch_line("srun -N2 -n8 ./osu_bcast", 1);
  ASSERT_TRUE(glued);
  EXPECT_EQ(glued->ranks_per_host, 4);
  auto rsh = parse_launch_line(
      "$MV2_HOME/bin/mpirun_rsh --export-all -np 2 a100-01 a100-01 MV2_USE_CUDA=1 osu_allreduce", 1);
  ASSERT_TRUE(rsh);
  EXPECT_EQ(rsh->hosts, 1);
  EXPECT_EQ(rsh->ranks_per_host, 2);
  EXPECT_EQ(rsh->host_names, (std::vector<std::string>{"a100-01"}));
  EXPECT_EQ(srun->program, "osu_allgather");
  EXPECT_EQ(srun2->program, "all_reduce_perf");
  EXPECT_EQ(rsh->program, "osu_allreduce");
  EXPECT_TRUE(srun->inconsistent.empty());
  // A launch of another program: parsed, but not the benchmark's (program "").
  auto smi = parse_launch_line("+ srun -N1 -n1 nvidia-smi -L", 1);
  ASSERT_TRUE(smi);
  EXPECT_EQ(smi->program, "");
  // The stated rank count wins; a host list's slots (capacity) or -N that multiply to another
  // count are dropped, with the host names.
  auto slots = parse_launch_line("mpirun -np 8 -H node1:8,node2:8 ./osu_allgather", 1);
  ASSERT_TRUE(slots);
  EXPECT_EQ(slots->ranks, 8);
  EXPECT_FALSE(slots->hosts);
  EXPECT_FALSE(slots->ranks_per_host);
  EXPECT_TRUE(slots->host_names.empty());
  EXPECT_NE(slots->inconsistent.find("states 8 ranks"), std::string::npos) << slots->inconsistent;
  EXPECT_NE(slots->inconsistent.find("2 host(s) x 8 rank(s) per host = 16 ranks"), std::string::npos)
      << slots->inconsistent;
  auto four = parse_launch_line("mpirun -np 16 -N 8 -H a,b,c,d ./osu_allgather", 1);
  ASSERT_TRUE(four);
  EXPECT_EQ(four->ranks, 16);
  EXPECT_FALSE(four->hosts);
  EXPECT_FALSE(four->ranks_per_host);
  EXPECT_EQ(four->describe(), "16 rank(s)");
  auto odd = parse_launch_line("mpirun -np 6 -H a,b,c,d ./osu_allgather", 1);
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->ranks, 6);
  EXPECT_FALSE(odd->hosts);
  EXPECT_FALSE(odd->inconsistent.empty());
  // Huge shapes: multiplied in 64 bits, the rank count left unset past the import's cap.
  auto huge = parse_launch_line("srun -N 100000 --ntasks-per-node=100000 ./osu_allgather", 1);
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->hosts, 100000);
  EXPECT_FALSE(huge->ranks);
  // No launcher, or a launcher that says nothing about the shape.
  EXPECT_FALSE(parse_launch_line("./build/alltoall_perf -b 8 -e 1024M -f 2 -g 2", 1));
  EXPECT_FALSE(parse_launch_line("srun ./osu_allreduce", 1));
}

// Ranks per host as other launchers spell it (issue 44's leftovers): Intel MPI / MPICH Hydra
// -ppn/-perhost, Open MPI --map-by ppr:N:node (with modifiers), srun --tasks-per-node (Slurm's
// alias of --ntasks-per-node). Two options of one line that disagree: neither is evidence.
TEST(ImportLogs, LaunchLinesRanksPerHostSpellings) {
  using import_detail::parse_launch_line;
  for (const char* line :
       {"mpiexec.hydra -n 16 -ppn 8 ./osu_allreduce", "mpirun -np 16 -perhost 8 ./osu_allreduce",
        "mpiexec -perhost 8 -hosts a,b ./osu_allreduce",
        "mpirun -np 16 --map-by ppr:8:node ./osu_allreduce",
        "mpirun -np 16 --map-by ppr:8:node:PE=2 ./osu_allreduce",
        "mpirun -np 16 -map-by ppr:8:node,oversubscribe ./osu_allreduce",
        "srun -N 2 --tasks-per-node=8 ./osu_allreduce",
        "srun -N2 --tasks-per-node 8 ./osu_allreduce",
        "srun --nodes=2 --ntasks-per-node=8 ./osu_allreduce"}) {
    auto s = parse_launch_line(line, 1);
    ASSERT_TRUE(s) << line;
    EXPECT_EQ(s->ranks_per_host, 8) << line;
    EXPECT_EQ(s->hosts, 2) << line;
    EXPECT_EQ(s->ranks, 16) << line;
    EXPECT_TRUE(s->inconsistent.empty()) << line << ": " << s->inconsistent;
  }
  // Mappings that say nothing of ranks per host.
  for (const char* line : {"mpirun -np 16 --map-by ppr:8:socket ./osu_allreduce",
                           "mpirun -np 16 --map-by node ./osu_allreduce",
                           "mpirun -np 16 --map-by ppr:8:nodes ./osu_allreduce"}) {
    auto s = parse_launch_line(line, 1);
    ASSERT_TRUE(s) << line;
    EXPECT_EQ(s->ranks, 16) << line;
    EXPECT_FALSE(s->ranks_per_host) << line;
    EXPECT_FALSE(s->hosts) << line;
  }
  // Self-contradicting: the stated rank count stays, the rest is dropped and said.
  auto two =
      parse_launch_line("mpirun -np 16 -ppn 8 --map-by ppr:4:node -H a,b ./osu_allreduce", 1);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->ranks, 16);
  EXPECT_FALSE(two->ranks_per_host);
  EXPECT_FALSE(two->hosts);
  EXPECT_TRUE(two->host_names.empty());
  EXPECT_NE(two->inconsistent.find("-ppn gives 8 rank(s) per host but --map-by gives 4"),
            std::string::npos)
      << two->inconsistent;
  EXPECT_NE(two->inconsistent.find("only the rank count is used"), std::string::npos);
  auto alias =
      parse_launch_line("srun -n 8 --ntasks-per-node=4 --tasks-per-node=2 ./osu_allreduce", 1);
  ASSERT_TRUE(alias);
  EXPECT_EQ(alias->ranks, 8);
  EXPECT_FALSE(alias->ranks_per_host);
  EXPECT_FALSE(alias->hosts);
  EXPECT_NE(alias->inconsistent.find("--ntasks-per-node gives 4 rank(s) per host but "
                                     "--tasks-per-node gives 2"),
            std::string::npos)
      << alias->inconsistent;
  // Nothing left without a rank count: not a shape at all.
  EXPECT_FALSE(
      parse_launch_line("srun -N2 --ntasks-per-node=4 --tasks-per-node=8 ./osu_allreduce", 1));
  // The same value twice is no contradiction.
  auto same = parse_launch_line("mpirun -np 8 -ppn 4 -perhost 4 ./osu_allreduce", 1);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->hosts, 2);
  EXPECT_TRUE(same->inconsistent.empty());
}

// The log's launch line: only one that runs the benchmark; several that disagree: none; a shape
// over the import's cap: refused.
TEST(ImportLogs, LaunchLineOfTheBenchmark) {
  std::string table = "# OSU MPI Allgather Latency Test v7.4\n# Datatype: MPI_CHAR.\n"
                      "# Size       Avg Latency(us)\n8  9.00\n16  9.01\n";
  ParsedLog log = parse_log("+ srun -N1 -n1 nvidia-smi -L\nGPU 0: NVIDIA H100\n"
                            "+ srun -N2 --ntasks-per-node=4 ./osu_allgather\n\n" + table,
                            "s1", LogFormat::Auto);
  ASSERT_TRUE(log.launch);
  EXPECT_EQ(log.launch->line, 3);
  EXPECT_EQ(log.launch->hosts, 2);
  EXPECT_EQ(log.launch->ranks_per_host, 4);
  EXPECT_TRUE(log.launch_ignored.empty());
  log = parse_log("srun -N2 --ntasks-per-node=4 ./osu_allgather\n"
                  "srun -N2 --ntasks-per-node=4 ./osu_allgather -m 8:16\n" + table,
                  "same", LogFormat::Auto);
  ASSERT_TRUE(log.launch);  // the same shape twice: agreed
  EXPECT_EQ(log.launch->line, 1);
  log = parse_log("srun -N2 --ntasks-per-node=4 ./osu_allgather\n"
                  "srun -N1 --ntasks-per-node=8 ./osu_allgather\n" + table,
                  "two", LogFormat::Auto);
  EXPECT_FALSE(log.launch);
  EXPECT_NE(log.launch_ignored.find("lines 1 ("), std::string::npos) << log.launch_ignored;
  EXPECT_NE(log.launch_ignored.find("neither is used"), std::string::npos) << log.launch_ignored;
  ASSERT_FALSE(log.notes.empty());
  EXPECT_NE(log.notes.back().find("different shapes"), std::string::npos) << log.notes.back();
  for (const char* line : {"srun -N 4096 --ntasks-per-node=4096 ./osu_allgather\n",
                           "srun -N 100000 --ntasks-per-node=100000 ./osu_allgather\n"}) {
    try {
      (void)parse_log(std::string(line) + table, "big", LogFormat::Auto);
      ADD_FAILURE() << line << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("big:1: the launch line"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("more than the 1048576"), std::string::npos) << e.what();
    }
  }
}

TEST(ImportLogs, DateLines) {
  using import_detail::date_line_utc;
  EXPECT_EQ(date_line_utc("Thu Mar  5 22:00:43 UTC 2026"), "2026-03-05T22:00:43Z");
  EXPECT_EQ(date_line_utc("2026-03-05T22:00:43Z"), "2026-03-05T22:00:43Z");
  EXPECT_EQ(date_line_utc("2026-03-05 23:30:43.123+01:30"), "2026-03-05T22:00:43Z");
  EXPECT_EQ(date_line_utc("2026-01-01T00:30:00-01:00"), "2026-01-01T01:30:00Z");
  EXPECT_FALSE(date_line_utc("Thu Mar  5 22:00:43 CET 2026"));  // a zone name it cannot convert
  EXPECT_FALSE(date_line_utc("2026-03-05 22:00:43"));           // no zone: whose clock?
  EXPECT_FALSE(date_line_utc("#  Rank  0 Group  0 Pid 1583987 on HOST device  0"));
  EXPECT_FALSE(date_line_utc("2026-13-05T22:00:43Z"));
  // Those dates, not converted: as written, with the zone's name.
  using import_detail::date_line_unconverted;
  const auto cet = date_line_unconverted("Thu Mar  5 22:00:43 CET 2026");
  ASSERT_TRUE(cet);
  EXPECT_EQ(cet->local, "2026-03-05T22:00:43");
  EXPECT_EQ(cet->zone, "CET");
  const auto bare = date_line_unconverted("2026-03-05 22:00:43");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->local, "2026-03-05T22:00:43");
  EXPECT_EQ(bare->zone, "");
  EXPECT_FALSE(date_line_unconverted("2026-03-05T22:00:43Z"));  // converts: not this
  EXPECT_FALSE(date_line_unconverted("2026-13-05 22:00:43"));
  EXPECT_FALSE(date_line_unconverted("Thu Mar  5 22:00:43 C3T 2026"));
}

// nccl-tests JSON start_time has no zone: recorded as written, and said so.
TEST(ImportLogs, JsonStartTimeWithoutZone) {
  const std::string text = read("import/ncclt-json-all_reduce-synthetic-2x2.json");
  ASSERT_NE(text.find("\"start_time\":\"2026-11-27 10:00:00\""), std::string::npos);
  ParsedLog log = parse_log(text, "j", LogFormat::Auto);
  EXPECT_EQ(log.run_date, "2026-11-27T10:00:00");
  EXPECT_EQ(log.run_date_from, "the log's start_time, zone not stated");
  std::string zoned = text;
  zoned.replace(zoned.find("2026-11-27 10:00:00"), 19, "2026-11-27 10:00:00+01:00");
  log = parse_log(zoned, "j", LogFormat::Auto);
  EXPECT_EQ(log.run_date, "2026-11-27T09:00:00Z");
  std::string junk = text;
  junk.replace(junk.find("2026-11-27 10:00:00"), 19, "yesterday");
  log = parse_log(junk, "j", LogFormat::Auto);
  EXPECT_EQ(log.run_date, "");
  EXPECT_NE(log.run_date_ignored.find("\"yesterday\" is not a date"), std::string::npos)
      << log.run_date_ignored;
}

TEST(ImportLogs, UnnamedTableCandidates) {
  const std::string text = read("import/ncclt-alltoall-unnamed-H20-1x4.txt");
  const ParsedLog log = parse_log(text, "u", LogFormat::Auto);
  EXPECT_FALSE(log.collective);
  EXPECT_TRUE(log.undetermined);
  EXPECT_EQ(log.candidates, (std::vector<Collective>{Collective::AllGather, Collective::AllToAll}));
  EXPECT_NE(log.skip_reason.find("--collective all_gather or --collective all_to_all"),
            std::string::npos)
      << log.skip_reason;
  EXPECT_EQ(parse_log(text, "u", LogFormat::Auto, Collective::AllToAll).collective,
            Collective::AllToAll);
  for (Collective wrong : {Collective::AllReduce, Collective::ReduceScatter, Collective::Broadcast,
                           Collective::Gather}) {
    try {
      (void)parse_log(text, "u", LogFormat::Auto, wrong);
      ADD_FAILURE() << collective_info(wrong).name << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("contradicts the table"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(find_collective_alias("alltoall"), Collective::AllToAll);
  EXPECT_EQ(find_collective_alias("osu_allgather"), Collective::AllGather);
  EXPECT_EQ(find_collective_alias("reduce_scatter_perf"), Collective::ReduceScatter);
  EXPECT_EQ(find_collective_alias("Reduce-Scatter"), Collective::ReduceScatter);
  EXPECT_EQ(find_collective_alias("osu_bcast"), Collective::Broadcast);
  EXPECT_FALSE(find_collective_alias("alltoallv"));
  EXPECT_FALSE(find_collective("alltoall"));  // files keep the exact names
}

}  // namespace
