// libFuzzer target: the torch.profiler trace reader of `shardbench import` (formats/
// import_trace.hpp): the byte source (plain JSON or gzip, several members, cut short), the SAX
// state machine, the sizes of each NCCL kernel and the merge. The bytes go through memory and
// through a file (read_trace_file's fopen/fread path).
#include "fuzz_target.hpp"
#include "shardcal/formats/import_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fm = shardcal::formats;
  const std::string bytes = shardcal::fuzz::as_text(data, size);
  shardcal::fuzz::accepts([&] {
    const fm::ParsedTrace t = fm::parse_trace_bytes(bytes, "fuzz.json");
    // ranks_per_host 1 divides every world: the merge runs whatever the hosts say.
    if (!t.calls.empty()) (void)fm::merge_traces({t}, 1);
  });
  const std::string& path = shardcal::fuzz::write_temp(data, size, ".trace");
  shardcal::fuzz::accepts([&] { (void)fm::read_trace_file(path); });
  return 0;
}
