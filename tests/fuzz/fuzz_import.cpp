// libFuzzer target: the benchmark-log parsers of `shardbench import` (nccl-tests text and JSON,
// OSU). Every format is tried on every input, so text reaches the JSON parser and vice versa.
#include "fuzz_target.hpp"
#include "shardcal/formats/import_logs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fm = shardcal::formats;
  const std::string text = shardcal::fuzz::as_text(data, size);
  auto parse = [&](fm::LogFormat f) {
    const fm::ParsedLog log = fm::parse_log(text, "fuzz.log", f);
    for (const fm::LogRow& r : log.rows) (void)fm::table_bytes(log, r, 8);
  };
  shardcal::fuzz::accepts([&] { parse(fm::LogFormat::Auto); });
  // The seed check asks only that valid seeds pass detection; the explicit formats may reject.
  if (!shardcal::fuzz::rejection_is_error)
    for (fm::LogFormat f :
         {fm::LogFormat::NcclTests, fm::LogFormat::NcclTestsJson, fm::LogFormat::Osu})
      shardcal::fuzz::accepts([&] { parse(f); });
  return 0;
}
