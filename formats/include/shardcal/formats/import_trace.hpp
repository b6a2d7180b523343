#pragma once
// torch.profiler traces (Chrome/Kineto JSON, optionally gzipped) for `shardbench import`
// (docs/IMPORT.md "torch.profiler traces"): the NCCL kernels of a training job as collective
// calls with their sizes, and several ranks' traces of one job merged into results points.
//
// What torch writes (checked in the torch 2.15.0 wheel: torch/profiler/profiler.py,
// torch/distributed/distributed_c10d.py, and the strings of libtorch_cpu.so / libtorch_cuda.so;
// ../shared/DESIGN.md §17):
//  - top level: "traceEvents" [...], "distributedInfo" {backend, rank, world_size, pg_count,
//    pg_config [{pg_name, pg_desc, backend_config, pg_size, ranks}], nccl_version "2.21.5"
//    (nccl only)}, "deviceProperties" [{id, name, ...}], "host_name", "record_shapes".
//  - GPU kernels: {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
//    (older NCCL "ncclKernel_AllReduce_RING_LL_Sum_float"), "ts", "dur" (us), "args":
//    {"External id", "device", "stream", "correlation", ...}}; recent torch copies the comm
//    metadata (ParamCommsDebugInfo) into the kernel's args: "Collective name", "dtype" (c10
//    ScalarType names: Float, BFloat16, ...), "In msg nelems", "Out msg nelems", "Group size",
//    "In split size", "Out split size" (lists, written as text "[1, 2]"), "Global rank start",
//    "Global rank stride", "Process Group Name", "Process Group Description", "Process Group
//    Ranks" (text "[0, 1, 2, 3]").
//  - CPU ops ("cat": "cpu_op"): "record_param_comms" with the same args; "c10d::allreduce_",
//    "c10d::_allgather_base_", ... with "Input Dims", "Input type", "Concrete Inputs" (the
//    c10d op schemas fix which input is which); user annotations "nccl:all_reduce",
//    "gloo:all_reduce". A kernel's "External id" is the External id of the CPU op that was
//    innermost when it was launched.
//
// Pure functions of bytes (no writes), so a libFuzzer target can call parse_trace_bytes. Errors
// are shardcal::Error "NAME: what is wrong; what to do".
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcal/collectives.hpp"
#include "shardcal/dtype.hpp"

namespace shardcal::formats {

// One collective call on one rank: one NCCL kernel with its sizes.
struct TraceCall {
  Collective collective = Collective::AllReduce;
  std::string torch_name;          // torch's collective name ("allreduce", "_allgather_base")
  DType dtype = DType::F32;
  std::int64_t bytes = 0;          // S of the collective table
  int group_size = 0;
  std::vector<int> group_ranks;    // global ranks of the process group, ascending
  std::string pg_name, pg_desc;
  double ts_us = 0, dur_us = 0;
  std::string sizes_from;          // "kernel args" | "record_param_comms" | "Input Dims of c10d::..."
  std::string kernel;              // the kernel's name up to its first '('
  // Reducing collectives: the NCCL kernel's op (ncclDevKernel_AllReduce_Sum_f32_...: sum, prod,
  // max, min, avg for PreMulSum/SumPostDiv); "sum" when the name has none. "" otherwise.
  std::string redop;
  int device = -1;                 // the kernel's "device"
  // torch's sequence number of the call in its process group (comm metadata "Seq"): the same
  // call has the same number on every rank of the group. -1: the trace has none.
  std::int64_t seq = -1;
};

struct TracePgConfig {
  std::string name, desc;
  int size = 0;
  std::vector<int> ranks;
};

struct ParsedTrace {
  std::string name;                // as given (messages)
  std::string sha256;              // of the file's bytes (compressed as stored)
  std::uint64_t file_bytes = 0;
  bool gzip = false;
  // distributedInfo
  std::optional<int> rank, world_size;
  std::string backend, nccl_version;
  std::vector<TracePgConfig> pg_config;
  std::string host_name;
  std::map<int, std::string> gpus;  // deviceProperties: id -> name
  bool record_shapes = false;
  std::vector<TraceCall> calls;     // collective calls with sizes, in time order
  int nccl_kernels = 0;             // every NCCL kernel seen
  int c10d_ops = 0;                 // CPU c10d:: collective ops seen (gloo traces have only these)
  // NCCL kernels not imported, by reason: "send/recv", "barrier", "reduce (not in shardcal's
  // table)", "no sizes", "uneven all_to_all splits", "unknown dtype", "no process group", ...
  std::map<std::string, int> skipped;
};

// True when the first bytes of a file look like a torch.profiler trace: gzip's magic, or JSON
// text naming "traceEvents" / "schemaVersion" / "distributedInfo" / "deviceProperties".
bool looks_like_trace(std::string_view head);

// Streams the file (gzip or plain, detected by its magic) through a SAX parser: memory is the
// calls kept, not the trace. Throws Error: unreadable file, a gzip stream cut short or corrupt,
// JSON that ends early or is malformed, not a trace.
ParsedTrace read_trace_file(const std::string& path);
// The same on bytes in memory (gzip or plain); `name` names them in messages.
ParsedTrace parse_trace_bytes(std::string_view bytes, const std::string& name);

// Several ranks' traces of one job, merged.
struct TracePoint {
  Collective collective = Collective::AllReduce;
  DType dtype = DType::F32;
  std::int64_t bytes = 0;
  std::vector<int> group_ranks;
  std::string pg_name, pg_desc;
  std::string redop;           // reducing collectives (TraceCall::redop)
  int group_size = 0;
  int groups = 1;              // groups of this size running at once (world / n when it divides)
  int hosts_spanned = 1;
  int max_ranks_per_host = 1;
  int ranks_merged = 0;        // ranks of the group whose traces were given
  std::vector<double> samples_s;  // one per call: the shortest kernel over those ranks
  std::vector<std::string> sizes_from;  // distinct
  std::vector<std::string> torch_names;  // distinct
};

struct MergedTraces {
  int world = 0;
  std::vector<std::pair<std::string, std::vector<int>>> hosts;  // name, ranks
  std::string topology_from;
  std::vector<TracePoint> points;
  std::map<std::string, int> skipped;  // summed over traces
  int calls = 0;                       // merged calls (each a sample)
  std::vector<std::string> notes;
};

// Merges traces of one job: per process group, the k-th call on each rank is the same call
// (checked: collective, bytes, dtype agree), its sample the shortest duration over the ranks.
// ranks_per_host > 0 sets the hosts (blocks of consecutive ranks); else the traces' host names
// when every rank's trace is given. Throws Error for traces of different jobs (world sizes,
// NCCL versions, a rank twice), a world size contradicting the ranks, no usable calls.
MergedTraces merge_traces(const std::vector<ParsedTrace>& traces, int ranks_per_host);

namespace trace_detail {
// torch's collective names ("allreduce", "_allgather_base", "all_to_allv", "reduce_scatter_tensor
// _coalesced", ...) and NCCL kernel names ("AllGather", "SendRecv") -> the table's collective;
// nullopt with `skip` set ("send/recv", "barrier", "reduce (not in shardcal's table)", "other")
// for the rest.
std::optional<Collective> collective_of(std::string_view name, std::string& skip);
// torch ScalarType names (Float, BFloat16, Half, Double, Int, Long, Byte), caffe2 type names in
// "Input type" (float, c10::BFloat16, c10::Half, double, int, long int, unsigned char) and NCCL
// kernel suffixes (f32, bf16, f16, f64, i32, i64, u8, float, half, ...).
std::optional<DType> dtype_of(std::string_view name);
// "[0, 1, 2]" or a JSON array of integers; nullopt for anything else (a truncated "[0, 1, ...]").
std::optional<std::vector<std::int64_t>> int_list(std::string_view text);
}  // namespace trace_detail

}  // namespace shardcal::formats
