// The torch.profiler trace reader (formats/import_trace.hpp): names, the byte source (plain,
// gzip, several gzip members, cut short, corrupt), the SAX state machine and the merge.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "shardcal/error.hpp"
#include "shardcal/formats/import_trace.hpp"
#include "shardcal/formats/sha256.hpp"

namespace {

using namespace shardcal;
using namespace shardcal::formats;

std::string gzip(const std::string& text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, uLong(text.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = uInt(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// One rank's trace: an all_gather kernel (bf16, 4 ranks) with torch's comm metadata, a
// send/recv kernel and a compute kernel, in torch 2.15's layout.
std::string trace(int rank, double dur, long long out_nelems = 4096) {
  return R"J({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],
  "distributedInfo": {"backend": "nccl", "rank": )J" +
         std::to_string(rank) + R"J(, "world_size": 4, "pg_count": 1,
    "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                   "pg_size": 4, "ranks": [0, 1, 2, 3]}], "nccl_version": "2.21.5"},
  "record_shapes": 1, "host_name": "h0",
  "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "ts": 5.0, "dur": 3.0, "args": {}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "pid": 0, "tid": 7, "ts": 10.0, "dur": )J" +
         std::to_string(dur) + R"J(, "args": {"External id": 3, "device": 0, "stream": 7,
     "Collective name": "_allgather_base", "dtype": "BFloat16", "In msg nelems": 1024,
     "Out msg nelems": )J" +
         std::to_string(out_nelems) + R"J(, "Group size": 4, "In split size": "[]", "Out split size": "[]",
     "Process Group Name": "0", "Process Group Description": "default_pg",
     "Process Group Ranks": "[0, 1, 2, 3]"}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(x)", "ts": 40.0, "dur": 2.0,
     "args": {"External id": 5, "Collective name": "send", "In msg nelems": 8, "dtype": "Float",
              "Group size": 2, "Process Group Ranks": "[0, 1]"}},
    7, "text", [1, 2]
  ], "traceName": "x"})J";
}

TEST(ImportTrace, Names) {
  std::string skip;
  EXPECT_EQ(trace_detail::collective_of("allreduce", skip), Collective::AllReduce);
  EXPECT_EQ(trace_detail::collective_of("_allgather_base", skip), Collective::AllGather);
  EXPECT_EQ(trace_detail::collective_of("allgather_into_tensor_coalesced", skip), Collective::AllGather);
  EXPECT_EQ(trace_detail::collective_of("_reduce_scatter_base", skip), Collective::ReduceScatter);
  EXPECT_EQ(trace_detail::collective_of("all_to_allv", skip), Collective::AllToAll);
  EXPECT_EQ(trace_detail::collective_of("AllGather", skip), Collective::AllGather);
  EXPECT_EQ(trace_detail::collective_of("_broadcast_oop", skip), Collective::Broadcast);
  EXPECT_FALSE(trace_detail::collective_of("SendRecv", skip));
  EXPECT_EQ(skip, "send/recv");
  EXPECT_FALSE(trace_detail::collective_of("all_reduce_barrier", skip));
  EXPECT_EQ(skip, "barrier");
  EXPECT_FALSE(trace_detail::collective_of("_reduce_oop", skip));
  EXPECT_NE(skip.find("reduce"), std::string::npos);
  EXPECT_EQ(trace_detail::dtype_of("BFloat16"), DType::BF16);
  EXPECT_EQ(trace_detail::dtype_of("c10::Half"), DType::F16);
  EXPECT_EQ(trace_detail::dtype_of("long int"), DType::I64);
  EXPECT_EQ(trace_detail::dtype_of("f32"), DType::F32);
  EXPECT_FALSE(trace_detail::dtype_of("Float8_e4m3fn"));
  EXPECT_EQ(trace_detail::int_list("[0, 4, 8]"), (std::vector<std::int64_t>{0, 4, 8}));
  EXPECT_EQ(trace_detail::int_list("[]"), std::vector<std::int64_t>{});
  EXPECT_FALSE(trace_detail::int_list("[0, 1, ...]"));
  EXPECT_FALSE(trace_detail::int_list("0, 1"));
}

TEST(ImportTrace, PlainAndGzipAgree) {
  const std::string text = trace(0, 12.5);
  const ParsedTrace a = parse_trace_bytes(text, "a.json");
  ASSERT_EQ(a.calls.size(), 1u);
  const TraceCall& c = a.calls[0];
  EXPECT_EQ(c.collective, Collective::AllGather);
  EXPECT_EQ(c.dtype, DType::BF16);
  EXPECT_EQ(c.bytes, 4096 * 2);  // the whole output
  EXPECT_EQ(c.group_ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(c.dur_us, 12.5);
  EXPECT_EQ(c.sizes_from, "kernel args");
  EXPECT_EQ(c.kernel, "ncclDevKernel_AllGather_RING_LL");
  EXPECT_EQ(c.redop, "");  // all_gather does not reduce
  EXPECT_EQ(a.nccl_kernels, 2);
  EXPECT_EQ(a.skipped.at("send/recv"), 1);
  EXPECT_EQ(a.rank, 0);
  EXPECT_EQ(a.world_size, 4);
  EXPECT_EQ(a.nccl_version, "2.21.5");
  EXPECT_EQ(a.gpus.at(0), "NVIDIA H100");
  EXPECT_EQ(a.host_name, "h0");
  EXPECT_TRUE(a.record_shapes);
  EXPECT_FALSE(a.gzip);
  EXPECT_EQ(a.sha256, sha256_bytes(text));

  const std::string gz = gzip(text);
  const ParsedTrace b = parse_trace_bytes(gz, "a.json.gz");
  EXPECT_TRUE(b.gzip);
  ASSERT_EQ(b.calls.size(), 1u);
  EXPECT_EQ(b.calls[0].bytes, c.bytes);
  EXPECT_EQ(b.sha256, sha256_bytes(gz));  // of the stored (compressed) bytes
  EXPECT_EQ(b.file_bytes, gz.size());

  // Two gzip members (gzip(1) of a file appended to): one stream.
  const std::string two = gzip(text.substr(0, 100)) + gzip(text.substr(100));
  EXPECT_EQ(parse_trace_bytes(two, "two.gz").calls.size(), 1u);
}

TEST(ImportTrace, RedopFromTheKernelName) {
  std::string t = trace(0, 10.0);
  const std::string from = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  t.replace(t.find(from), from.size(), "ncclDevKernel_AllReduce_PreMulSum_bf16_RING_LL(x)");
  const std::string name = "\"Collective name\": \"_allgather_base\"";
  t.replace(t.find(name), name.size(), "\"Collective name\": \"allreduce\"");
  const ParsedTrace a = parse_trace_bytes(t, "avg");
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0].collective, Collective::AllReduce);
  EXPECT_EQ(a.calls[0].redop, "avg");
  EXPECT_EQ(a.calls[0].bytes, 1024 * 2);  // all_reduce: one rank's buffer (In msg nelems)
}

TEST(ImportTrace, DamagedInput) {
  const std::string gz = gzip(trace(0, 12.5));
  auto message = [](const std::string& bytes) {
    try {
      parse_trace_bytes(bytes, "t");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(gz.substr(0, gz.size() / 2)).find("cut short"), std::string::npos);
  EXPECT_NE(message(gz.substr(0, gz.size() - 4)).find("cut short"), std::string::npos);
  std::string bad = gz;
  bad[bad.size() / 2] = char(bad[bad.size() / 2] ^ 0x55);
  EXPECT_NE(message(bad).find("gzip"), std::string::npos);
  const std::string text = trace(0, 1);
  EXPECT_NE(message(text.substr(0, text.size() / 2)).find("before the trace is complete"),
            std::string::npos);
  EXPECT_NE(message("[1, 2]").find("not a torch.profiler trace"), std::string::npos);
  EXPECT_NE(message(R"({"a": 1})").find("traceEvents"), std::string::npos);
  EXPECT_NE(message(R"({"traceEvents": [}])").find("malformed"), std::string::npos);
  EXPECT_NE(message("").find("not a torch.profiler trace"), std::string::npos);
  // A c10d op's Input Dims nested 200000 deep (a stack overflow before): refused, one message.
  const std::string deep =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "args": {"Input Dims": )" +
      std::string(200000, '[') + std::string(200000, ']') + "}}]}";
  EXPECT_NE(message(deep).find("nested more than 64 levels deep"), std::string::npos);
  // 2^59 + 1 elements (bytes wrapped around before): beyond any real call.
  EXPECT_NE(message(trace(0, 1, 576460752303423489LL)).find("Out msg nelems 576460752303423489"),
            std::string::npos);
}

TEST(ImportTrace, MergeTakesTheShortestAndChecksAgreement) {
  std::vector<ParsedTrace> ts;
  const double durs[] = {30.0, 12.0, 55.0, 19.5};  // rank 1 arrived last: it waited least
  for (int r = 0; r < 4; ++r) {
    std::string t = trace(r, durs[r]);
    const std::string from = "\"host_name\": \"h0\"";
    t.replace(t.find(from), from.size(), "\"host_name\": \"h" + std::to_string(r / 2) + "\"");
    ts.push_back(parse_trace_bytes(t, "r" + std::to_string(r)));
  }
  const MergedTraces m = merge_traces(ts, 0);
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(m.world, 4);
  ASSERT_EQ(m.hosts.size(), 2u);
  const TracePoint& p = m.points[0];
  ASSERT_EQ(p.samples_s.size(), 1u);
  EXPECT_DOUBLE_EQ(p.samples_s[0], 12.0e-6);
  EXPECT_EQ(p.ranks_merged, 4);
  EXPECT_EQ(p.hosts_spanned, 2);
  EXPECT_EQ(p.max_ranks_per_host, 2);
  EXPECT_EQ(p.groups, 1);
  EXPECT_EQ(m.skipped.at("send/recv"), 4);

  // Rank 2 recorded another size for the same call: not one job's step.
  ts[2] = parse_trace_bytes(trace(2, 55.0, 8192), "r2");
  EXPECT_THROW(merge_traces(ts, 2), Error);
  // A rank twice.
  ts[2] = parse_trace_bytes(trace(1, 55.0), "r1 again");
  EXPECT_THROW(merge_traces(ts, 2), Error);
}

}  // namespace
