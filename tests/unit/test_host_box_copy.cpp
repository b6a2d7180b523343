// host_copy_box (core/src/host_box_copy.cpp) against a naive per-element reference on random
// boxes, element sizes 1..16 bytes and 1-6 dims, plus the run-size paths and the error checks;
// and collapse_box (shardcal/box_copy.hpp, shared with the CUDA copy) on known boxes.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "shardcal/box_copy.hpp"
#include "shardcal/error.hpp"
#include "shardcal/memory.hpp"

using shardcal::BoxCopy;
using shardcal::Shape;

namespace {

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto e : s) n *= e;
  return n;
}

// Element by element, multi-index by multi-index: obviously right, slow.
void reference_copy_box(const BoxCopy& c) {
  const std::size_t nd = c.extent.size();
  const std::int64_t n = numel(c.extent);
  std::vector<std::int64_t> i(nd, 0);
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t rem = k;
    for (std::size_t d = nd; d-- > 0;) {
      i[d] = rem % c.extent[d];
      rem /= c.extent[d];
    }
    std::int64_t so = 0, doff = 0;
    for (std::size_t d = 0; d < nd; ++d) {
      so = so * c.src_shape[d] + c.src_offset[d] + i[d];
      doff = doff * c.dst_shape[d] + c.dst_offset[d] + i[d];
    }
    const auto* s = static_cast<const unsigned char*>(c.src) + so * std::int64_t(c.elem_size);
    auto* t = static_cast<unsigned char*>(c.dst) + doff * std::int64_t(c.elem_size);
    for (std::size_t b = 0; b < c.elem_size; ++b) t[b] = s[b];
  }
}

std::string describe(const BoxCopy& c) {
  auto v = [](const Shape& s) {
    std::ostringstream o;
    o << '[';
    for (std::size_t i = 0; i < s.size(); ++i) o << (i ? "," : "") << s[i];
    o << ']';
    return o.str();
  };
  return "es=" + std::to_string(c.elem_size) + " extent=" + v(c.extent) +
         " src_shape=" + v(c.src_shape) + " src_offset=" + v(c.src_offset) +
         " dst_shape=" + v(c.dst_shape) + " dst_offset=" + v(c.dst_offset);
}

// Runs host_copy_box and the reference on the same random source and the same random initial
// destination (so bytes outside the box must stay as they were), and compares every byte.
void check(BoxCopy c) {
  std::mt19937 rng(unsigned(numel(c.src_shape) * 31 + numel(c.extent)));
  std::vector<unsigned char> src(std::size_t(numel(c.src_shape)) * c.elem_size);
  std::vector<unsigned char> got(std::size_t(numel(c.dst_shape)) * c.elem_size), want;
  for (auto& b : src) b = static_cast<unsigned char>(rng());
  for (auto& b : got) b = static_cast<unsigned char>(rng());
  want = got;
  c.src = src.data();
  c.dst = got.data();
  shardcal::host_copy_box(c);
  c.dst = want.data();
  reference_copy_box(c);
  ASSERT_EQ(got, want) << describe(c);
}

// A random box of `nd` dims in random source and destination arrays. Dims are often whole (so
// they collapse), often of extent 1, and often cut in one array only.
BoxCopy random_box(std::mt19937& rng, std::size_t nd, std::size_t es) {
  BoxCopy c;
  c.elem_size = es;
  auto pick = [&](int lo, int hi) { return std::int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (std::size_t d = 0; d < nd; ++d) {
    const std::int64_t e = pick(0, 5) == 0 ? 1 : pick(1, nd <= 2 ? 70 : nd == 3 ? 9 : 4);
    auto array = [&](Shape& shape, Shape& off) {
      const bool whole = pick(0, 2) == 0;
      const std::int64_t pad = whole ? 0 : pick(1, nd <= 3 ? 6 : 2);
      const std::int64_t o = whole ? 0 : pick(0, int(pad));
      shape.push_back(e + pad);
      off.push_back(o);
    };
    c.extent.push_back(e);
    array(c.src_shape, c.src_offset);
    array(c.dst_shape, c.dst_offset);
  }
  return c;
}

}  // namespace

TEST(HostBoxCopy, MatchesReferenceOnRandomBoxes) {
  std::mt19937 rng(20261123);
  const std::size_t sizes[] = {1, 2, 4, 8, 16, 3, 6, 12};
  int cases = 0;
  for (std::size_t nd = 1; nd <= 6; ++nd)
    for (std::size_t es : sizes)
      for (int i = 0; i < 40; ++i) {
        check(random_box(rng, nd, es));
        ++cases;
        if (HasFatalFailure()) return;
      }
  EXPECT_EQ(cases, 6 * 8 * 40);
}

// Every run-size path: fixed power-of-two runs, 16-byte chunks with an overlapping tail, short
// odd runs, and long memcpy runs; as pack and as unpack, 2-D and 3-D.
TEST(HostBoxCopy, EveryRunLength) {
  for (std::int64_t run = 1; run <= 300; ++run)
    for (std::size_t es : {std::size_t(1), std::size_t(2)}) {
      const std::int64_t w = run;  // elements per run
      BoxCopy pack{nullptr, {5, w}, {0, 0}, nullptr, {5, w + 3}, {0, 2}, {5, w}, es};
      check(pack);
      BoxCopy unpack{nullptr, {5, w + 3}, {0, 1}, nullptr, {5, w}, {0, 0}, {5, w}, es};
      check(unpack);
      BoxCopy box3{nullptr, {4, 3, w + 1}, {1, 0, 1}, nullptr, {3, 5, w}, {0, 1, 0}, {3, 2, w}, es};
      check(box3);
      if (HasFatalFailure()) return;
    }
}

TEST(HostBoxCopy, CollapsesWholeDimsIntoOneRun) {
  // Whole array (one memcpy), whole trailing dims under a cut leading dim, extent-1 dims between.
  check({nullptr, {4, 5, 6}, {0, 0, 0}, nullptr, {4, 5, 6}, {0, 0, 0}, {4, 5, 6}, 4});
  check({nullptr, {2, 5, 6}, {0, 0, 0}, nullptr, {4, 5, 6}, {1, 0, 0}, {2, 5, 6}, 2});
  check({nullptr, {3, 1, 6}, {0, 0, 0}, nullptr, {3, 4, 6}, {0, 2, 0}, {3, 1, 6}, 8});
  check({nullptr, {1, 1, 1}, {0, 0, 0}, nullptr, {2, 3, 4}, {1, 2, 3}, {1, 1, 1}, 2});
  // Rank 0 (a scalar) copies one element.
  check({nullptr, {}, {}, nullptr, {}, {}, {}, 8});
}

TEST(HostBoxCopy, EmptyBoxTouchesNothing) {
  std::vector<float> src(12, 1.0f), dst(12, 2.0f);
  shardcal::host_copy_box({dst.data(), {3, 4}, {0, 0}, src.data(), {3, 4}, {0, 0}, {3, 0}, 4});
  EXPECT_EQ(dst, std::vector<float>(12, 2.0f));
}

TEST(HostBoxCopy, RefusesBadBoxes) {
  std::vector<float> a(12), b(12);
  auto msg = [&](BoxCopy c) -> std::string {
    try {
      shardcal::host_copy_box(c);
    } catch (const shardcal::Error& e) {
      return e.what();
    }
    return "<no error>";
  };
  EXPECT_EQ(msg({a.data(), {3, 4}, {0, 0}, b.data(), {3, 4}, {0}, {3, 4}, 4}),
            "internal: copy_box with inconsistent ranks");
  EXPECT_EQ(msg({a.data(), {3, 4}, {0, 1}, b.data(), {3, 4}, {0, 0}, {3, 4}, 4}),
            "internal: copy_box out of bounds on dim 1");
  EXPECT_EQ(msg({a.data(), {3, 4}, {0, 0}, b.data(), {3, 4}, {-1, 0}, {2, 4}, 4}),
            "internal: copy_box out of bounds on dim 0");
  EXPECT_EQ(msg({a.data(), {3, 4}, {0, 0}, b.data(), {3, 4}, {0, 0}, {3, -1}, 4}),
            "internal: copy_box out of bounds on dim 1");
  EXPECT_EQ(msg({a.data(), {3, 4}, {0, 0}, b.data(), {3, 4}, {0, 0}, {3, 4}, 0}),
            "internal: copy_box with element size 0");
}

// The example of shardcal/box_copy.hpp, and the order the outer dims are reported in.
TEST(CollapseBox, MergesWholeDimsAndReportsOuterDimsInnermostFirst) {
  std::vector<shardcal::BoxDim> dims;
  auto collect = [&](const shardcal::BoxDim& d) { dims.push_back(d); };
  // Pack of the upper half of the last dim: dims 0 and 1 merge into one outer dim.
  shardcal::BoxRuns r = shardcal::collapse_box(
      {nullptr, {4, 6, 4}, {0, 0, 0}, nullptr, {4, 6, 8}, {0, 0, 4}, {4, 6, 4}, 4}, collect);
  EXPECT_FALSE(r.empty);
  EXPECT_EQ(r.run, 16);
  EXPECT_EQ(r.src_base, 16);
  EXPECT_EQ(r.dst_base, 0);
  ASSERT_EQ(dims.size(), 1u);
  EXPECT_EQ(dims[0].extent, 24);
  EXPECT_EQ(dims[0].src_stride, 32);
  EXPECT_EQ(dims[0].dst_stride, 16);

  // Cut in every dim: nothing merges; an extent-1 dim only moves the bases.
  dims.clear();
  r = shardcal::collapse_box(
      {nullptr, {3, 1, 4, 5}, {0, 0, 0, 0}, nullptr, {4, 2, 5, 6}, {1, 1, 1, 1}, {3, 1, 4, 5}, 2},
      collect);
  EXPECT_EQ(r.run, 10);                                          // 5 elements of 2 bytes
  EXPECT_EQ(r.src_base, 2 * ((((1 * 2) + 1) * 5 + 1) * 6 + 1));  // row-major offset, in bytes
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims[0].extent, 4);  // innermost outer dim first
  EXPECT_EQ(dims[0].src_stride, 12);
  EXPECT_EQ(dims[0].dst_stride, 10);
  EXPECT_EQ(dims[1].extent, 3);
  EXPECT_EQ(dims[1].src_stride, 2 * 2 * 5 * 6);
  EXPECT_EQ(dims[1].dst_stride, 2 * 1 * 4 * 5);

  // Empty: no dims reported, even when a later dim is out of bounds (not checked).
  dims.clear();
  r = shardcal::collapse_box({nullptr, {3, 4}, {0, 0}, nullptr, {3, 4}, {0, 9}, {0, 4}, 4},
                             collect);
  EXPECT_TRUE(r.empty);
  EXPECT_TRUE(dims.empty());
}
