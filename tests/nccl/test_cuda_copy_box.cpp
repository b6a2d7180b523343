// CudaMemory::copy_box against shardcal::host_copy_box.
//
// BoxPlan.* run everywhere: they execute the launch plan on the host with the very index
// function the kernel uses (box_word_offsets), so dim merging, word-size choice, the 32-bit
// index narrowing and the split into several launches are checked without a GPU.
// CudaCopyBox.* run the kernel on a device and are skipped when there is none.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nccl/box_plan.hpp"
#include "nccl/cuda_check.hpp"
#include "nccl/cuda_memory.hpp"
#include "shardcal/error.hpp"
#include "shardcal/memory.hpp"

namespace {

using shardcal::BoxCopy;
using shardcal::Shape;
using shardcal::nccl::BoxKernelArgs;
using shardcal::nccl::BoxPlan;
using shardcal::nccl::plan_box_copy;
using shardcal::nccl::split_for_kernel;

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto e : s) n *= e;
  return n;
}

std::string describe(const BoxCopy& c) {
  auto sh = [](const Shape& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
    return out + "]";
  };
  return "elem " + std::to_string(c.elem_size) + " src " + sh(c.src_shape) + " at " +
         sh(c.src_offset) + " dst " + sh(c.dst_shape) + " at " + sh(c.dst_offset) + " extent " +
         sh(c.extent);
}

// A random box problem. Shapes are small but cover full dims (mergeable), extent-1 dims,
// unit inner dims and empty boxes; `misalign` shifts the arrays off their allocation's alignment.
struct Problem {
  BoxCopy copy;
  std::size_t src_shift = 0, dst_shift = 0;  // bytes
};

Problem random_problem(std::mt19937& rng, int max_dims, bool allow_empty) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::size_t sizes[] = {1, 2, 4, 8};
  Problem p;
  BoxCopy& c = p.copy;
  c.elem_size = sizes[pick(0, 3)];
  const int nd = pick(0, max_dims);
  for (int d = 0; d < nd; ++d) {
    const int kind = pick(0, 9);
    std::int64_t extent = 0, src = 0, dst = 0;
    if (kind <= 2) {  // whole dim on both sides: merges with its neighbours
      extent = src = dst = pick(1, 6);
    } else if (kind == 3) {  // extent 1
      extent = 1;
      src = pick(1, 5);
      dst = pick(1, 5);
    } else {
      extent = pick(allow_empty && kind == 4 ? 0 : 1, 5);
      src = extent + pick(0, 4);
      dst = extent + pick(0, 4);
    }
    c.extent.push_back(extent);
    c.src_shape.push_back(src);
    c.dst_shape.push_back(dst);
    c.src_offset.push_back(pick(0, int(src - extent)));
    c.dst_offset.push_back(pick(0, int(dst - extent)));
  }
  p.src_shift = std::size_t(pick(0, 2)) * c.elem_size * std::size_t(pick(0, 3));
  p.dst_shift = std::size_t(pick(0, 2)) * c.elem_size * std::size_t(pick(0, 3));
  return p;
}

std::vector<std::byte> pattern(std::size_t n, unsigned salt) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = std::byte((i * 131 + std::size_t(salt) * 17 + 7) & 0xff);
  return v;
}

// Executes a plan on host memory exactly as the device does (same launches, same offsets).
void run_plan_on_host(const BoxPlan& plan, void* dst, const void* src) {
  if (plan.empty) return;
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  if (plan.extent.empty()) {
    std::memcpy(d + plan.dst_base, s + plan.src_base, std::size_t(plan.run) * plan.word);
    return;
  }
  for (const auto& l : split_for_kernel(plan)) {
    // The kernel relies on the planner's alignment promise for its wide loads and stores.
    EXPECT_EQ((reinterpret_cast<std::uintptr_t>(s) + std::uint64_t(l.src_offset)) % plan.word, 0u);
    EXPECT_EQ((reinterpret_cast<std::uintptr_t>(d) + std::uint64_t(l.dst_offset)) % plan.word, 0u);
    BoxKernelArgs<std::uint32_t> narrow;
    if (l.narrow_index) {
      narrow.total = std::uint32_t(l.args.total);
      narrow.run = std::uint32_t(l.args.run);
      narrow.ndim = l.args.ndim;
      for (int k = 0; k < shardcal::nccl::kBoxKernelMaxDims; ++k) {
        narrow.extent[k] = std::uint32_t(l.args.extent[k]);
        narrow.src_stride[k] = std::uint32_t(l.args.src_stride[k]);
        narrow.dst_stride[k] = std::uint32_t(l.args.dst_stride[k]);
      }
    }
    for (std::uint64_t i = 0; i < l.args.total; ++i) {
      std::uint64_t so = 0, dof = 0;
      shardcal::nccl::box_word_offsets(l.args, i, so, dof);
      if (l.narrow_index) {  // the 32-bit path the kernel takes must address the same words
        std::uint32_t s32 = 0, d32 = 0;
        shardcal::nccl::box_word_offsets(narrow, std::uint32_t(i), s32, d32);
        ASSERT_EQ(s32, so);
        ASSERT_EQ(d32, dof);
      }
      std::memcpy(d + l.dst_offset + dof * plan.word, s + l.src_offset + so * plan.word, plan.word);
    }
  }
}

// ---- host-side plan tests ----------------------------------------------------------------

TEST(BoxPlan, RandomBoxesMatchHostCopyBox) {
  std::mt19937 rng(20261121);
  for (int iter = 0; iter < 3000; ++iter) {
    Problem p = random_problem(rng, 6, /*allow_empty=*/true);
    BoxCopy& c = p.copy;
    const std::size_t src_bytes = std::size_t(numel(c.src_shape)) * c.elem_size;
    const std::size_t dst_bytes = std::size_t(numel(c.dst_shape)) * c.elem_size;
    // 16-byte aligned storage, shifted: exercises every word size.
    std::vector<std::uint64_t> src_store(src_bytes / 8 + 8), a_store(dst_bytes / 8 + 8),
        b_store(dst_bytes / 8 + 8);
    auto* src = reinterpret_cast<std::byte*>(src_store.data()) + p.src_shift;
    auto* a = reinterpret_cast<std::byte*>(a_store.data()) + p.dst_shift;
    auto* b = reinterpret_cast<std::byte*>(b_store.data()) + p.dst_shift;
    const auto sp = pattern(src_bytes, 1), dp = pattern(dst_bytes, 2);
    if (src_bytes) std::memcpy(src, sp.data(), src_bytes);
    if (dst_bytes) std::memcpy(a, dp.data(), dst_bytes);
    if (dst_bytes) std::memcpy(b, dp.data(), dst_bytes);

    c.src = src;
    c.dst = a;
    shardcal::host_copy_box(c);
    c.dst = b;
    const BoxPlan plan = plan_box_copy(c);
    run_plan_on_host(plan, b, src);
    ASSERT_EQ(std::memcmp(a, b, dst_bytes), 0) << describe(c);
  }
}

TEST(BoxPlan, MergesWholeDimsAndPicksWideWords) {
  alignas(16) static float src[4 * 6 * 8], dst[4 * 6 * 8];
  BoxCopy c;
  c.src = src;
  c.dst = dst;
  c.elem_size = 4;
  // Whole array: one contiguous run, no kernel.
  c.src_shape = c.dst_shape = c.extent = {4, 6, 8};
  c.src_offset = c.dst_offset = {0, 0, 0};
  BoxPlan p = plan_box_copy(c);
  EXPECT_TRUE(p.extent.empty());
  EXPECT_EQ(p.word, 16u);
  EXPECT_EQ(p.run * p.word, 4u * 6 * 8 * 4);

  // Shard along the last dim (a pack): rows of 4 floats = one 16-byte word each.
  c.extent = {4, 6, 4};
  c.src_offset = {0, 0, 4};
  c.dst_shape = {4, 6, 4};
  p = plan_box_copy(c);
  ASSERT_EQ(p.extent.size(), 1u);  // dims 0 and 1 merged: 24 rows
  EXPECT_EQ(p.extent[0], 24);
  EXPECT_EQ(p.word, 16u);
  EXPECT_EQ(p.run, 1);
  EXPECT_EQ(p.src_stride[0], 2);  // 8 floats = 2 words
  EXPECT_EQ(p.dst_stride[0], 1);

  // Odd element offset: only 4-byte words are aligned.
  c.extent = {4, 6, 3};
  c.src_offset = {0, 0, 1};
  c.dst_shape = {4, 6, 3};
  p = plan_box_copy(c);
  EXPECT_EQ(p.word, 4u);
}

TEST(BoxPlan, EmptyAndScalarBoxes) {
  alignas(16) static double src[12], dst[12];
  BoxCopy c;
  c.src = src;
  c.dst = dst;
  c.elem_size = 8;
  c.src_shape = c.dst_shape = {3, 4};
  c.src_offset = c.dst_offset = {0, 0};
  c.extent = {0, 4};
  EXPECT_TRUE(plan_box_copy(c).empty);
  BoxCopy scalar;
  scalar.src = src;
  scalar.dst = dst;
  scalar.elem_size = 8;
  const BoxPlan p = plan_box_copy(scalar);
  EXPECT_FALSE(p.empty);
  EXPECT_TRUE(p.extent.empty());
  EXPECT_EQ(std::size_t(p.run) * p.word, 8u);
}

TEST(BoxPlan, RejectsWhatHostCopyBoxRejects) {
  static char buf[64];
  BoxCopy c;
  c.src = c.dst = buf;
  c.elem_size = 1;
  c.src_shape = c.dst_shape = {4, 4};
  c.src_offset = {0, 1};
  c.dst_offset = {0, 0};
  c.extent = {4, 4};
  std::string host_msg, plan_msg;
  try {
    shardcal::host_copy_box(c);
  } catch (const shardcal::Error& e) {
    host_msg = e.what();
  }
  try {
    (void)plan_box_copy(c);
  } catch (const shardcal::Error& e) {
    plan_msg = e.what();
  }
  EXPECT_FALSE(plan_msg.empty());
  EXPECT_EQ(plan_msg, host_msg);
  c.src_offset = {0, 0};
  c.extent = {4};
  EXPECT_THROW((void)plan_box_copy(c), shardcal::Error);
}

// The `rows` kernel's split (box_rows_split + box_rows_item, the functions the kernel runs):
// every word of every row copied by exactly one (item, lane, u), for teams of 1 .. 256, one or
// several items per row, both index widths.
template <class Index>
void check_rows_split(std::uint64_t run, std::uint64_t rows) {
  using shardcal::nccl::box_rows_item;
  const auto split = shardcal::nccl::box_rows_split(run, rows * run);
  ASSERT_LE(1 << split.team_log2, shardcal::nccl::kBoxThreadsPerBlock);
  ASSERT_EQ(split.items, rows * split.chunks);
  std::vector<int> hits(std::size_t(rows * run), 0);
  for (std::uint64_t item = 0; item < split.items; ++item)
    for (std::uint64_t lane = 0; lane < (1u << split.team_log2); ++lane) {
      Index row = 0, first = 0;
      box_rows_item(Index(item), Index(lane), split.team_log2, Index(split.chunks), row, first);
      ASSERT_LT(std::uint64_t(row), rows);
      for (int u = 0; u < shardcal::nccl::kBoxWordsPerThread; ++u) {
        const std::uint64_t col = shardcal::nccl::box_rows_col(first, u, split.team_log2);
        if (col < run) ++hits[std::size_t(std::uint64_t(row) * run + col)];
      }
    }
  for (std::size_t w = 0; w < hits.size(); ++w)
    ASSERT_EQ(hits[w], 1) << "run " << run << " rows " << rows << " word " << w;
}

TEST(BoxPlan, RowsKernelSplitCoversEveryWordOnce) {
  for (std::uint64_t run :
       {1,   2,   3,   4,   5,   7,   8,    9,    17,   63,   64,   65,   127,
        128, 129, 255, 256, 257, 511, 1023, 1024, 1025, 1027, 2048, 4097, 20000})
    for (std::uint64_t rows : {1, 3}) {
      check_rows_split<std::uint32_t>(run, rows);
      check_rows_split<std::uint64_t>(run, rows);
    }
}

TEST(BoxPlan, ManyDimsSplitIntoSeveralLaunches) {
  // 11 dims of extent 2 inside shape 3: nothing merges, so 11 outer dims (no unit-stride run).
  BoxCopy c;
  c.elem_size = 2;
  c.src_shape = c.dst_shape = Shape(11, 3);
  c.extent = Shape(11, 2);
  c.src_offset = Shape(11, 1);
  c.dst_offset = Shape(11, 0);
  const std::size_t n = std::size_t(numel(c.src_shape)) * 2;
  std::vector<std::uint64_t> s_store(n / 8 + 2), a_store(n / 8 + 2), b_store(n / 8 + 2);
  const auto sp = pattern(n, 3);
  std::memcpy(s_store.data(), sp.data(), n);
  c.src = s_store.data();
  c.dst = a_store.data();
  shardcal::host_copy_box(c);
  c.dst = b_store.data();
  const BoxPlan plan = plan_box_copy(c);
  const auto launches = split_for_kernel(plan);
  EXPECT_EQ(plan.extent.size(), 10u);  // innermost dim became the (unit-stride) run
  EXPECT_EQ(launches.size(), 4u);      // 10 - 8 = 2 leading dims of extent 2 iterated on the host
  run_plan_on_host(plan, b_store.data(), s_store.data());
  EXPECT_EQ(std::memcmp(a_store.data(), b_store.data(), n), 0);
}

// ---- device tests --------------------------------------------------------------------------

class CudaCopyBox : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (shardcal::nccl::cuda_device_count(&why) == 0)
      GTEST_SKIP() << "skipped: no CUDA device (" << why << ")";
  }
};

// Both kernels (box_kernel.hpp): `rows`, the default, and `flat`, kept for comparison.
constexpr shardcal::nccl::BoxKernel kKernels[] = {shardcal::nccl::BoxKernel::rows,
                                                  shardcal::nccl::BoxKernel::flat};

TEST_F(CudaCopyBox, RandomBoxesMatchHostCopyBox) {
  shardcal::nccl::CudaMemory mem(0);
  for (const auto kernel : kKernels) {
    SCOPED_TRACE(kernel == shardcal::nccl::BoxKernel::rows ? "kernel rows" : "kernel flat");
    mem.set_box_kernel(kernel);
    std::mt19937 rng(7);
    for (int iter = 0; iter < 1500; ++iter) {
      Problem p = random_problem(rng, 6, /*allow_empty=*/true);
      BoxCopy& c = p.copy;
      const std::size_t src_bytes = std::size_t(numel(c.src_shape)) * c.elem_size;
      const std::size_t dst_bytes = std::size_t(numel(c.dst_shape)) * c.elem_size;
      shardcal::Buffer src_dev(mem, src_bytes + 64), dst_dev(mem, dst_bytes + 64);
      auto* src = static_cast<std::byte*>(src_dev.data()) + p.src_shift;
      auto* dst = static_cast<std::byte*>(dst_dev.data()) + p.dst_shift;
      const auto sp = pattern(src_bytes, unsigned(iter)),
                 dp = pattern(dst_bytes, unsigned(iter) + 1);
      mem.copy_from_host(src, sp.data(), src_bytes);
      mem.copy_from_host(dst, dp.data(), dst_bytes);

      c.src = src;
      c.dst = dst;
      mem.copy_box(c);
      std::vector<std::byte> got(dst_bytes);
      mem.copy_to_host(got.data(), dst, dst_bytes);

      std::vector<std::byte> expect = dp;
      BoxCopy h = c;
      h.src = sp.data();
      h.dst = expect.data();
      shardcal::host_copy_box(h);
      ASSERT_EQ(got, expect) << describe(c);
    }
  }
}

// Rows of every length class the `rows` kernel treats differently: teams of 1 .. 256 threads,
// one or several items per row, a last item cut short; 1-byte words (odd offsets) and 16-byte.
// The destination has a row pitch with padding (prefilled, compared too), so a word written past
// a row's end is caught; each case also runs through the 64-bit index path (launch_box_copy
// with narrow_index false), which the planner uses only for boxes of >= 2^31 words.
TEST_F(CudaCopyBox, EveryRowLengthMatchesHostCopyBox) {
  shardcal::nccl::CudaMemory mem(0);
  for (const auto kernel : kKernels) {
    mem.set_box_kernel(kernel);
    for (std::int64_t len :
         {1,   2,   3,   4,   5,   7,   8,    9,    17,   63,   64,   65,   127,
          128, 129, 255, 256, 257, 511, 1023, 1024, 1025, 1027, 2048, 4097, 20000}) {
      for (std::size_t es : {std::size_t(1), std::size_t(4)}) {
        // es 1: box {3, len} at {1, 1} of {5, len + 2}: 1-byte words, run = len words.
        // es 4: box {3, 4 len} at {1, 4} of {5, 4 len + 4}: 16-byte words, run = len words.
        // The destination: {3, w + pad}, the box at {0, 0}.
        const std::int64_t w = es == 1 ? len : 4 * len, pad = es == 1 ? 2 : 4, at = es == 1 ? 1 : 4;
        const Shape src_shape{5, w + pad}, dst_shape{3, w + pad}, ext{3, w};
        const std::size_t src_bytes = std::size_t(numel(src_shape)) * es,
                          dst_bytes = std::size_t(numel(dst_shape)) * es;
        shardcal::Buffer src_dev(mem, src_bytes), dst_dev(mem, dst_bytes);
        const auto sp = pattern(src_bytes, unsigned(len)),
                   dp = pattern(dst_bytes, unsigned(len) + 7);
        mem.copy_from_host(src_dev.data(), sp.data(), src_bytes);
        BoxCopy c{dst_dev.data(), dst_shape, {0, 0}, src_dev.data(), src_shape, {1, at}, ext, es};
        const BoxPlan plan = plan_box_copy(c);
        ASSERT_EQ(plan.word, es == 1 ? 1u : 16u) << describe(c);
        std::vector<std::byte> expect = dp;
        BoxCopy h = c;
        h.src = sp.data();
        h.dst = expect.data();
        shardcal::host_copy_box(h);
        for (bool wide : {false, true}) {
          mem.copy_from_host(dst_dev.data(), dp.data(), dst_bytes);
          if (!wide) {
            mem.copy_box(c);
          } else {
            for (const auto& l : split_for_kernel(plan))
              ASSERT_EQ(shardcal::nccl::launch_box_copy(
                            static_cast<std::byte*>(c.dst) + l.dst_offset,
                            static_cast<const std::byte*>(c.src) + l.src_offset, plan.word,
                            /*narrow_index=*/false, l.args, 64, mem.stream(), kernel),
                        cudaSuccess);
          }
          std::vector<std::byte> got(dst_bytes);
          mem.copy_to_host(got.data(), dst_dev.data(), dst_bytes);
          ASSERT_EQ(got, expect) << describe(c)
                                 << (kernel == shardcal::nccl::BoxKernel::rows ? " rows" : " flat")
                                 << (wide ? " 64-bit index" : "");
        }
      }
    }
  }
}

TEST_F(CudaCopyBox, LargePackAndUnpackRoundTrip) {
  // A shard of dim 1 of a 512 x 4096 bf16 tensor (the non-leading-dim pack before an
  // all-to-all), packed into a contiguous buffer and unpacked into a fresh tensor.
  shardcal::nccl::CudaMemory mem(0);
  const std::int64_t rows = 512, cols = 4096, part = 1024, at = 2048;
  const std::size_t es = 2, full = std::size_t(rows * cols) * es,
                    packed = std::size_t(rows * part) * es;
  shardcal::Buffer a(mem, full), b(mem, full), pk(mem, packed);
  const auto host = pattern(full, 5);
  mem.copy_from_host(a.data(), host.data(), full);
  mem.fill_zero(b.data(), full);
  BoxCopy pack{pk.data(), {rows, part}, {0, 0}, a.data(), {rows, cols}, {0, at}, {rows, part}, es};
  mem.copy_box(pack);
  BoxCopy unpack{b.data(),     {rows, cols}, {0, at},      pk.data(),
                 {rows, part}, {0, 0},       {rows, part}, es};
  mem.copy_box(unpack);
  std::vector<std::byte> got(full);
  mem.copy_to_host(got.data(), b.data(), full);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < cols; ++k) {
      const std::size_t off = std::size_t(r * cols + k) * es;
      const bool inside = k >= at && k < at + part;
      for (std::size_t j = 0; j < es; ++j)
        ASSERT_EQ(got[off + j], inside ? host[off + j] : std::byte{0})
            << "row " << r << " col " << k;
    }
}

}  // namespace
