// Walks the collective table (shardcal/collectives.hpp): every entry, plain and v-form, is sized,
// called and checked only through the table (make_collective_call, run_collective,
// reference_input, reference_output), on whatever backend the suite runs on (sim at several
// world sizes; mpi/nccl at the launcher's). A new entry is covered without touching this file.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "shardcal/collectives.hpp"
#include "shardcal/communicator.hpp"
#include "shardcal/dtype.hpp"
#include "shardcal/memory.hpp"
#include "spmd.hpp"

namespace {

using shardcal::Collective;
using shardcal::CollectiveCall;
using shardcal::Communicator;
using shardcal::DType;

constexpr double kSentinel = 253.0;  // never produced by the reference patterns (<= 250)

std::vector<int> world_sizes() {
  if (const int f = shardcal::testing::fixed_world_size(); f != 0) return {f};
  return {1, 2, 3, 4, 8};
}

// Count patterns per group of n: uniform ones for every entry, uneven (with an empty position
// where n > 1) for entries with a v-form.
std::vector<std::vector<std::int64_t>> count_sets(const shardcal::CollectiveInfo& info, int n) {
  std::vector<std::vector<std::int64_t>> sets{std::vector<std::int64_t>(std::size_t(n), 1),
                                              std::vector<std::int64_t>(std::size_t(n), 37)};
  if (info.has_v_form) {
    std::vector<std::int64_t> uneven(static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) uneven[std::size_t(q)] = (q == n / 2 && n > 1) ? 0 : 3 * q + 5;
    sets.push_back(uneven);
  }
  return sets;
}

std::vector<std::byte> encode(DType t, std::size_t n, auto&& value) {
  const std::size_t es = shardcal::dtype_size(t);
  std::vector<std::byte> out(n * es);
  for (std::size_t i = 0; i < n; ++i) shardcal::store_from_double(t, out.data() + i * es, value(std::int64_t(i)));
  return out;
}

// Runs one call through the table and returns "" or a description of the first mismatch.
std::string run_and_check(Communicator& comm, const CollectiveCall& c) {
  const auto& info = shardcal::collective_info(c.op);
  auto& mem = comm.memory();
  const std::size_t es = shardcal::dtype_size(c.dtype);
  const int r = comm.rank();
  auto input = [&](std::int64_t i) { return shardcal::reference_input(c, r, i); };
  const bool recv_is_input = info.input_in_recv && r == 0;
  const auto send_h = encode(c.dtype, c.send_elems, input);
  const auto recv_h = encode(c.dtype, c.recv_elems, [&](std::int64_t i) { return recv_is_input ? input(i) : kSentinel; });
  shardcal::Buffer send(mem, std::max<std::size_t>(send_h.size(), 1));
  shardcal::Buffer recv(mem, std::max<std::size_t>(recv_h.size(), 1));
  if (!send_h.empty()) mem.copy_from_host(send.data(), send_h.data(), send_h.size());
  if (!recv_h.empty()) mem.copy_from_host(recv.data(), recv_h.data(), recv_h.size());
  mem.synchronize();
  shardcal::run_collective(comm, c, send.data(), recv.data());
  mem.synchronize();
  std::vector<std::byte> got(recv_h.size());
  if (!got.empty()) mem.copy_to_host(got.data(), recv.data(), got.size());
  mem.synchronize();
  const auto want = encode(c.dtype, c.recv_elems, [&](std::int64_t k) { return shardcal::reference_output(c, k); });
  std::size_t wrong = 0, first = 0;
  for (std::size_t k = 0; k < c.recv_elems; ++k)
    if (std::memcmp(got.data() + k * es, want.data() + k * es, es) != 0 && wrong++ == 0) first = k;
  if (wrong == 0) return "";
  return std::to_string(wrong) + " of " + std::to_string(c.recv_elems) + " wrong, first at " +
         std::to_string(first) + ": got " + std::to_string(shardcal::load_as_double(c.dtype, got.data() + first * es)) +
         ", expected " + std::to_string(shardcal::load_as_double(c.dtype, want.data() + first * es));
}

TEST(CollectiveTable, EveryEntryMatchesItsReference) {
  for (int w : world_sizes())
    shardcal::testing::run_spmd(w, [&](Communicator& comm) {
      int calls = 0;
      for (const auto& info : shardcal::kCollectives)
        for (DType t : {DType::F32, DType::BF16, DType::U8, DType::I64})
          for (const auto& counts : count_sets(info, comm.size())) {
            const CollectiveCall c = shardcal::make_collective_call(info.op, t, counts, comm.rank());
            const std::string bad = run_and_check(comm, c);
            EXPECT_EQ(bad, "") << info.name << (c.uniform ? " (plain)" : " (v-form)") << " "
                               << shardcal::dtype_name(t) << " rank " << comm.rank() << "/" << comm.size();
            ++calls;
          }
      EXPECT_GE(calls, int(shardcal::kCollectives.size()) * 8);
    });
}

TEST(CollectiveTable, EntriesAreConsistent) {
  ASSERT_EQ(shardcal::kCollectives.size(), 7u);
  for (std::size_t i = 0; i < shardcal::kCollectives.size(); ++i) {
    const auto& info = shardcal::kCollectives[i];
    EXPECT_EQ(static_cast<std::size_t>(info.op), i) << info.name;
    EXPECT_EQ(&shardcal::collective_info(info.op), &info);
    EXPECT_EQ(shardcal::find_collective(info.name), info.op);
    EXPECT_EQ(info.busbw_factor(1), 0.0);
    EXPECT_GT(info.busbw_factor(4), 0.0);
    EXPECT_EQ(info.ring_steps(1), 0);
    EXPECT_GE(info.ring_steps(4), 3);
  }
  // Uneven counts need a v-form; bad input names the collective and the fix.
  const std::vector<std::int64_t> uneven{1, 2};
  try {
    (void)shardcal::make_collective_call(Collective::AllReduce, DType::F32, uneven, 0);
    FAIL() << "uneven all_reduce accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce has no v-form"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)shardcal::make_collective_call(Collective::AllGather, DType::F32, uneven, 2), std::exception);
  EXPECT_THROW((void)shardcal::make_collective_call(Collective::AllGather, DType::F32, {}, 0), std::exception);
  // Sizes come from the entry: all_to_all with counts {1,2,3} at position 1 sends 6, receives 3x2.
  const std::vector<std::int64_t> c3{1, 2, 3};
  const auto a2a = shardcal::make_collective_call(Collective::AllToAll, DType::F64, c3, 1);
  EXPECT_FALSE(a2a.uniform);
  EXPECT_EQ(a2a.send_elems, 6u);
  EXPECT_EQ(a2a.recv_elems, 6u);
  const auto sc = shardcal::make_collective_call(Collective::Scatter, DType::F64, c3, 2);
  EXPECT_EQ(sc.send_elems, 0u);  // only the root sends
  EXPECT_EQ(sc.recv_elems, 3u);
  // Footprint: largest position (root: 6 + 1 elements of 8 bytes, each rounded to 256).
  EXPECT_EQ(sc.footprint_bytes(256), 512);
}

}  // namespace
