// Layout math and parsing: pure functions, checked exhaustively on small cases and against the
// exact error messages users see.
#include <gtest/gtest.h>

#include "shardcal/error.hpp"
#include "shardcal/layout.hpp"

using namespace shardcal;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TensorSpec spec(const char* mesh, const char* placements, const char* shape,
                DType t = DType::F32) {
  return TensorSpec(DeviceMesh::parse(mesh), parse_placements(placements),
                    TensorMeta{parse_shape(shape), t});
}

}  // namespace

TEST(Mesh, CoordinatesAreRowMajor) {
  DeviceMesh m({2, 3, 4});
  EXPECT_EQ(m.size(), 24);
  for (int r = 0; r < m.size(); ++r) EXPECT_EQ(m.rank_of(m.coord(r)), r);
  EXPECT_EQ(m.coord(23), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(m.coord(5), (std::vector<int>{0, 1, 1}));
}

TEST(Mesh, GroupsAlongDims) {
  DeviceMesh m({2, 4});
  EXPECT_EQ(m.group(5, {1}), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(m.group(5, {0}), (std::vector<int>{1, 5}));
  EXPECT_EQ(m.group(5, {0, 1}), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(m.group_color(5, {1}), 1);
  EXPECT_EQ(m.group_position(5, {1}), 1);
  EXPECT_EQ(m.group_color(6, {0}), 2);
  EXPECT_EQ(m.group_position(6, {0}), 1);
}

TEST(Mesh, ParseErrors) {
  EXPECT_NE(error_of([] { DeviceMesh::parse("2x0"); }).find("bad mesh '2x0' at character 3"),
            std::string::npos);
  EXPECT_NE(error_of([] { DeviceMesh::parse("2xx4"); }).find("expected positive extents"),
            std::string::npos);
  EXPECT_NE(error_of([] { DeviceMesh::parse(""); }).find("bad mesh"), std::string::npos);
}

TEST(Placement, RoundTrip) {
  const char* text = "S(0)[3,3,2,0],R,P(sum),P(avg),P(max),P(min),S(2)";
  EXPECT_EQ(placements_to_string(parse_placements(text)), text);
  EXPECT_EQ(placements_to_string(parse_placements(" S( 1 ) , P ")), "S(1),P(sum)");
}

TEST(Placement, ParseErrorsPointAtTheCharacter) {
  EXPECT_EQ(error_of([] { parse_placements("S(0)[3,x]"); }),
            "bad placements \"S(0)[3,x]\" at character 8: expected a shard size (non-negative "
            "integer)\n  S(0)[3,x]\n         ^");
  EXPECT_NE(error_of([] { parse_placements("P(prod)"); })
                .find("at character 3: unknown Partial op 'prod': expected sum, avg, max or min"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_placements("Q"); })
                .find("at character 1: unknown placement 'Q'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_placements("S0"); }).find("expected '(' after S"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_placements("S(0"); }).find("expected ')' after the shard dim"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_placements("S(-1)"); }).find("expected a tensor dim"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_placements("R R"); }).find("expected ',' between placements"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_placements("R,"); }).find("expected a placement"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_placements(""); }).find("expected at least one placement"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_placements("S(0)[1,2"); }).find("expected ',' or ']'"),
            std::string::npos);
}

TEST(Spec, InvalidSpecsExplainThemselves) {
  EXPECT_NE(error_of([] { spec("2x4", "S(0)", "10x7"); })
                .find("give 1 placement(s) but mesh 2x4 has 2 dim(s)"),
            std::string::npos);
  EXPECT_NE(error_of([] { spec("2x4", "S(2),R", "10x7"); })
                .find("placement 0 \"S(2)\" shards tensor dim 2, out of range for a 2-d tensor"),
            std::string::npos);
  EXPECT_NE(error_of([] { spec("2x4", "S(0)[3,6],R", "10x7"); })
                .find("sizes sum to 9 but tensor dim 0 has extent 10"),
            std::string::npos);
  EXPECT_NE(error_of([] { spec("2x4", "S(0)[3,3,4],R", "10x7"); })
                .find("lists 3 shard sizes but mesh dim 0 has 2 ranks"),
            std::string::npos);
  EXPECT_NE(error_of([] { spec("2x2", "S(0)[6,4],S(0)[3,3]", "10"); })
                .find("sizes sum to 6 but the piece of tensor dim 0 it splits"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_shape("10x-1"); }).find("bad tensor shape '10x-1' at character 4"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_dtype("f8"); }).find("unknown dtype 'f8'"), std::string::npos);
}

TEST(Spec, ChunkSemanticsMatchTorchChunk) {
  // torch.chunk(arange(5), 4) -> sizes 2,2,1 and DTensor pads with an empty 4th shard.
  auto p = split_extent(5, 4, {});
  EXPECT_EQ(p[0].size, 2);
  EXPECT_EQ(p[1].size, 2);
  EXPECT_EQ(p[2].size, 1);
  EXPECT_EQ(p[3].size, 0);
  EXPECT_EQ(p[3].start, 5);
  // 10 over 4: chunk 3 -> 3,3,3,1
  auto q = split_extent(10, 4, {});
  EXPECT_EQ(q[3].size, 1);
  // 0 extent: all empty
  for (auto k : split_extent(0, 3, {})) EXPECT_EQ(k.size, 0);
  // 6 over 4: chunk 2 -> 2,2,2,0 (torch.chunk gives only 3 chunks)
  auto r = split_extent(6, 4, {});
  EXPECT_EQ(r[3].size, 0);
}

TEST(Spec, LocalBoxesTileTheTensor) {
  // Exhaustive on a small case: every element is owned exactly once per non-shard coordinate.
  const TensorSpec s = spec("2x3", "S(0)[3,7],S(1)", "10x7");
  EXPECT_EQ(s.local_box(0), (Box{{0, 0}, {3, 3}}));
  EXPECT_EQ(s.local_box(2), (Box{{0, 6}, {3, 1}}));
  EXPECT_EQ(s.local_box(4), (Box{{3, 3}, {7, 3}}));
  std::int64_t total = 0;
  for (int r = 0; r < 6; ++r) total += s.local_numel(r);
  EXPECT_EQ(total, 70);
}

TEST(Spec, NestedShardingSplitsOuterFirst) {
  // S(0),S(0) over 2x2 on extent 8: outer gives [0,4),[4,8); inner splits each in two.
  const TensorSpec s = spec("2x2", "S(0),S(0)", "8x3");
  EXPECT_EQ(s.local_box(0).offset[0], 0);
  EXPECT_EQ(s.local_box(1).offset[0], 2);
  EXPECT_EQ(s.local_box(2).offset[0], 4);
  EXPECT_EQ(s.local_box(3).offset[0], 6);
  // Uneven outer with chunk inner: extent 5 -> outer 3,2 -> inner (2,1),(1,1).
  const TensorSpec u = spec("2x2", "S(0),S(0)", "5");
  EXPECT_EQ(u.local_shape(0), Shape{2});
  EXPECT_EQ(u.local_shape(1), Shape{1});
  EXPECT_EQ(u.local_box(2), (Box{{3}, {1}}));
  EXPECT_EQ(u.local_box(3), (Box{{4}, {1}}));
  // Explicit inner sizes apply to every outer piece.
  const TensorSpec e = spec("2x2", "S(0)[4,4],S(0)[4,0]", "8");
  EXPECT_EQ(e.local_box(1).shape, Shape{0});
  EXPECT_EQ(e.local_box(2), (Box{{4}, {4}}));
}

TEST(Spec, EmptyShardsStillHaveCompleteSpec) {
  const TensorSpec s = spec("4", "S(0)[3,0,0,2]", "5x2");
  EXPECT_EQ(s.local_shape(1), (Shape{0, 2}));
  EXPECT_EQ(s.local_box(3), (Box{{3, 0}, {2, 2}}));
  EXPECT_EQ(TensorSpec::deserialize(s.serialize()).serialize(), s.serialize());
  EXPECT_EQ(TensorSpec::deserialize(s.serialize()).hash(), s.hash());
}

TEST(Spec, SameLayoutIgnoresSpelling) {
  const TensorSpec s = spec("2", "S(0)", "10");
  EXPECT_TRUE(s.same_layout_on(0, Placement::shard(0, {5, 5})));
  EXPECT_FALSE(s.same_layout_on(0, Placement::shard(0, {4, 6})));
  EXPECT_FALSE(s.same_layout_on(0, Placement::replicate()));
}

TEST(DType, RoundTripAndReduce) {
  for (DType t : kAllDTypes) {
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
    std::vector<std::byte> a(dtype_size(t) * 3), b(dtype_size(t) * 3);
    for (int i = 0; i < 3; ++i) {
      store_from_double(t, a.data() + i * dtype_size(t), 250.0 - i);
      store_from_double(t, b.data() + i * dtype_size(t), double(i));
    }
    reduce_into(t, ReduceOp::Max, a.data(), b.data(), 3);
    EXPECT_EQ(load_as_double(t, a.data()), 250.0) << dtype_name(t);
    reduce_into(t, ReduceOp::Sum, a.data(), b.data(), 3);
    EXPECT_EQ(load_as_double(t, a.data() + 2 * dtype_size(t)), 250.0) << dtype_name(t);
    finish_avg(t, a.data(), 3, 2);
    EXPECT_EQ(load_as_double(t, a.data()), 125.0) << dtype_name(t);
  }
}

TEST(Spec, HostileSizesAreRejected) {
  const DeviceMesh m1({2});
  EXPECT_NE(error_of([&] { TensorSpec(m1, {Placement::shard(0, {-2, 12})}, TensorMeta{{10}, DType::F32}); })
                .find("negative shard size -2"),
            std::string::npos);
  EXPECT_NE(error_of([] { spec("3", "S(0)[9223372036854775807,9223372036854775807,12]", "10"); })
                .find("shard sizes larger than tensor dim 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_placements("S(4294967296)"); }).find("implausibly large"),
            std::string::npos);
  EXPECT_NE(error_of([] { spec("2", "S(0)", ""); }).find("shards a 0-d tensor (a scalar)"),
            std::string::npos);
  // A 0-d tensor may be replicated or partial.
  EXPECT_EQ(spec("2", "P(max)", "").local_numel(1), 1);
}

TEST(DType, IntegerSumsWrapInsteadOfOverflowing) {
  std::int32_t a = 2147483647, b = 1;
  reduce_into(DType::I32, ReduceOp::Sum, &a, &b, 1);
  EXPECT_EQ(a, -2147483647 - 1);
  std::int64_t c = 9223372036854775807LL, d = 2;
  reduce_into(DType::I64, ReduceOp::Sum, &c, &d, 1);
  EXPECT_EQ(c, -9223372036854775807LL);
}

TEST(Spec, CodeBuiltShapesAreChecked) {
  const DeviceMesh m({2});
  EXPECT_NE(error_of([&] { TensorSpec(m, {Placement::replicate()}, TensorMeta{{4, -1}, DType::F32}); })
                .find("has a negative extent"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              TensorSpec(m, {Placement::replicate()}, TensorMeta{{std::int64_t(1) << 40, std::int64_t(1) << 40}, DType::F32});
            }).find("more than 2^50 elements"),
            std::string::npos);
}
