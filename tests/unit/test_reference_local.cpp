// expected_reference_local (the reference block from the formula, no global tensor) equals
// expected_local sliced out of make_reference_tensor, for random specs: 0-3-D tensors with
// empty extents, random explicit sizes (empty shards too), nested sharding, partial placements
// of every reduce op, every dtype.
#include <gtest/gtest.h>

#include <random>

#include "shardcal/sharded_tensor.hpp"

using namespace shardcal;

TEST(ReferenceLocal, FormulaEqualsSliceOfGlobal) {
  std::mt19937_64 rng(251);
  const DType dtypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                          DType::I32, DType::I64, DType::U8};
  int blocks = 0, nonempty = 0, zeroed = 0, explicit_specs = 0, non_sum = 0;
  for (int c = 0; c < 400; ++c) {
    std::vector<int> mshape;
    for (int d = 0, n = std::uniform_int_distribution<int>(1, 3)(rng); d < n; ++d)
      mshape.push_back(std::uniform_int_distribution<int>(1, 3)(rng));
    const DeviceMesh mesh(mshape);
    Shape shape;
    for (int d = 0, n = std::uniform_int_distribution<int>(0, 3)(rng); d < n; ++d)
      shape.push_back(std::uniform_int_distribution<std::int64_t>(0, 300)(rng) % (d == 0 ? 300 : 7));
    const TensorMeta meta{shape, dtypes[std::uniform_int_distribution<int>(0, 6)(rng)]};
    std::vector<Placement> ps;
    std::vector<bool> sharded(shape.size(), false);
    for (int i = 0; i < mesh.ndim(); ++i) {
      const int k = std::uniform_int_distribution<int>(0, 4)(rng);
      if (k == 0 || shape.empty()) {
        ps.push_back(Placement::replicate());
      } else if (k == 1) {
        ps.push_back(Placement::partial(kAllReduceOps[std::uniform_int_distribution<int>(0, 3)(rng)]));
      } else {
        const int d = std::uniform_int_distribution<int>(0, int(shape.size()) - 1)(rng);
        std::vector<std::int64_t> sizes;
        // Random explicit sizes (often with empty shards) where d is not split yet, so they split
        // the whole extent.
        if (k == 4 && !sharded[std::size_t(d)]) {
          sizes.assign(std::size_t(mesh.extent(i)), 0);
          for (std::int64_t e = 0; e < shape[std::size_t(d)]; ++e)
            ++sizes[std::size_t(std::uniform_int_distribution<int>(0, mesh.extent(i) - 1)(rng))];
          ++explicit_specs;
        }
        sharded[std::size_t(d)] = true;
        ps.push_back(Placement::shard(d, std::move(sizes)));
      }
    }
    for (const Placement& p : ps) non_sum += p.is_partial() && p.op != ReduceOp::Sum;
    const TensorSpec spec(mesh, ps, meta);
    const std::vector<std::byte> global = make_reference_tensor(meta);
    for (int r = 0; r < mesh.size(); ++r) {
      const std::vector<std::byte> got = expected_reference_local(spec, r);
      EXPECT_EQ(got, expected_local(spec, global.data(), r)) << spec.serialize() << " rank " << r;
      ++blocks;
      nonempty += !got.empty();
      zeroed += !got.empty() && spec.has_partial() && mesh.coord(r) != std::vector<int>(mshape.size(), 0);
    }
  }
  EXPECT_GT(blocks, 1000);
  EXPECT_GT(nonempty, 500);
  EXPECT_GT(zeroed, 50);
  EXPECT_GT(explicit_specs, 30);
  EXPECT_GT(non_sum, 30);
}

TEST(ReferenceLocal, ExplicitUnevenSizes) {
  const DeviceMesh mesh({2, 4});
  const TensorMeta meta{{10, 7}, DType::F32};
  const TensorSpec spec(mesh, parse_placements("S(0)[3,7],S(1)"), meta);
  const std::vector<std::byte> global = make_reference_tensor(meta);
  for (int r = 0; r < mesh.size(); ++r)
    EXPECT_EQ(expected_reference_local(spec, r), expected_local(spec, global.data(), r)) << r;
}
