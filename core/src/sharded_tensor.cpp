#include "shardcal/sharded_tensor.hpp"

#include <algorithm>
#include <cstring>

#include "shardcal/error.hpp"
#include "shardcal/redistribute.hpp"

namespace shardcal {

namespace {

std::size_t esize(const TensorSpec& s) { return dtype_size(s.meta().dtype); }

// A rank whose coordinate is non-zero on some Replicate/Partial mesh dim holds a copy of a block
// that coordinate 0 also holds: when assembling the global tensor only the copy at coordinate 0
// is taken.
bool is_canonical_holder(const TensorSpec& spec, int rank) {
  const std::vector<int> c = spec.mesh().coord(rank);
  for (int i = 0; i < spec.mesh().ndim(); ++i)
    if (!spec.placement(i).is_shard() && c[std::size_t(i)] != 0) return false;
  return true;
}

std::vector<Placement> without_partials(const TensorSpec& s) {
  std::vector<Placement> ps = s.placements();
  for (Placement& p : ps)
    if (p.is_partial()) p = Placement::replicate();
  return ps;
}

// Assemble the global tensor from per-rank blocks laid out back to back (rank order).
std::vector<std::byte> assemble(const TensorSpec& spec, const std::vector<std::byte>& blocks,
                                const std::vector<std::size_t>& displs) {
  std::vector<std::byte> global(std::size_t(spec.meta().nbytes()));
  const Shape zero(spec.meta().shape.size(), 0);
  for (int r = 0; r < spec.mesh().size(); ++r) {
    if (!is_canonical_holder(spec, r)) continue;
    const Box b = spec.local_box(r);
    if (b.empty()) continue;
    host_copy_box({global.data(), spec.meta().shape, b.offset, blocks.data() + displs[std::size_t(r)] * esize(spec),
                   b.shape, zero, b.shape, esize(spec)});
  }
  return global;
}

}  // namespace

ShardedTensor::ShardedTensor(TensorSpec spec, int rank, Buffer local)
    : spec_(std::move(spec)), rank_(rank), local_(std::move(local)) {
  const std::int64_t want = spec_.local_nbytes(rank_);
  if (std::int64_t(local_.size()) != want)
    throw Error("local buffer of rank " + std::to_string(rank_) + " has " +
                std::to_string(local_.size()) + " bytes but spec " + spec_.serialize() +
                " gives this rank a block of shape [" + shape_to_string(spec_.local_shape(rank_)) +
                "] = " + std::to_string(want) + " bytes");
}

ShardedTensor ShardedTensor::from_local(MeshCommunicator& mc, TensorSpec spec, Buffer local) {
  if (!(spec.mesh() == mc.mesh()))
    throw Error("spec mesh " + spec.mesh().to_string() + " differs from the communicator's mesh " +
                mc.mesh().to_string());
  return ShardedTensor(std::move(spec), mc.rank(), std::move(local));
}

ShardedTensor ShardedTensor::zeros(MeshCommunicator& mc, TensorSpec spec) {
  Buffer b(mc.memory(), std::size_t(spec.local_nbytes(mc.rank())));
  mc.memory().fill_zero(b.data(), b.size());
  return from_local(mc, std::move(spec), std::move(b));
}

std::vector<std::byte> make_reference_tensor(const TensorMeta& meta) {
  const std::size_t es = dtype_size(meta.dtype);
  std::vector<std::byte> out(std::size_t(meta.numel()) * es);
  for (std::int64_t i = 0; i < meta.numel(); ++i)
    store_from_double(meta.dtype, out.data() + std::size_t(i) * es, double(i % 251));
  return out;
}

std::vector<std::byte> slice_global(const TensorMeta& meta, const void* global, const Box& box) {
  const std::size_t es = dtype_size(meta.dtype);
  std::vector<std::byte> out(std::size_t(box.numel()) * es);
  if (!box.empty())
    host_copy_box({out.data(), box.shape, Shape(box.shape.size(), 0), global, meta.shape,
                   box.offset, box.shape, es});
  return out;
}

std::vector<std::byte> expected_local(const TensorSpec& spec, const void* global, int rank) {
  std::vector<std::byte> out = slice_global(spec.meta(), global, spec.local_box(rank));
  const std::vector<int> c = spec.mesh().coord(rank);
  for (int i = 0; i < spec.mesh().ndim(); ++i) {
    const Placement& p = spec.placement(i);
    if (p.is_partial() && p.op == ReduceOp::Sum && c[std::size_t(i)] != 0) {
      if (!out.empty()) std::memset(out.data(), 0, out.size());  // sum-partial: coordinate 0 holds values
      break;
    }
  }
  return out;
}

std::vector<std::byte> expected_reference_local(const TensorSpec& spec, int rank) {
  const TensorMeta& meta = spec.meta();
  const std::size_t es = dtype_size(meta.dtype);
  const Box box = spec.local_box(rank);
  std::vector<std::byte> out(std::size_t(box.numel()) * es);
  if (out.empty()) return out;
  const std::vector<int> c = spec.mesh().coord(rank);
  for (int i = 0; i < spec.mesh().ndim(); ++i) {
    const Placement& p = spec.placement(i);
    if (p.is_partial() && p.op == ReduceOp::Sum && c[std::size_t(i)] != 0) {
      std::memset(out.data(), 0, out.size());  // sum-partial: coordinate 0 holds values
      return out;
    }
  }
  // Walk the block row by row (last dim contiguous); idx = the row's global multi-index.
  const std::size_t nd = box.shape.size();
  const std::int64_t inner = nd ? box.shape[nd - 1] : 1;
  Shape idx(nd, 0);
  std::size_t o = 0;
  for (std::int64_t row = 0, rows = box.numel() / std::max<std::int64_t>(inner, 1); row < rows; ++row) {
    std::int64_t lin = 0;
    for (std::size_t d = 0; d < nd; ++d) lin = lin * meta.shape[d] + box.offset[d] + idx[d];
    for (std::int64_t k = 0; k < inner; ++k, ++o)
      store_from_double(meta.dtype, out.data() + o * es, double((lin + k) % 251));
    for (std::size_t d = nd ? nd - 1 : 0; d-- > 0;) {  // next row: odometer over all dims but the last
      if (++idx[d] < box.shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

ShardedTensor ShardedTensor::from_global(MeshCommunicator& mc, const TensorSpec& spec,
                                         const void* global_host) {
  const std::vector<std::byte> mine = expected_local(spec, global_host, mc.rank());
  Buffer b(mc.memory(), mine.size());
  mc.memory().copy_from_host(b.data(), mine.data(), mine.size());
  return from_local(mc, spec, std::move(b));
}

ShardedTensor ShardedTensor::scatter_from_root(MeshCommunicator& mc, int root,
                                               const TensorSpec* spec, const void* global_host) {
  Communicator& world = mc.world();
  if (root < 0 || root >= world.size())
    throw Error("scatter root " + std::to_string(root) + " outside world of " +
                std::to_string(world.size()) + " ranks");
  // The spec travels with the data: receivers need nothing but the root id.
  std::string text;
  if (world.rank() == root) {
    if (spec == nullptr || (global_host == nullptr && spec->meta().nbytes() > 0))
      throw Error("scatter_from_root: the root (rank " + std::to_string(root) +
                  ") must pass the spec and the global tensor");
    text = spec->serialize();
  }
  world.broadcast_string(text, root);
  TensorSpec s = TensorSpec::deserialize(text);
  if (!(s.mesh() == mc.mesh()))
    throw Error("scattered spec mesh " + s.mesh().to_string() + " differs from the communicator's mesh " +
                mc.mesh().to_string());

  // Each distinct block leaves the root once (to the rank at coordinate 0 of every
  // Replicate/Partial mesh dim) and is then broadcast along those dims: the root's memory and
  // the v-call displacements stay bounded by the tensor size, not world x tensor.
  const int n = world.size();
  std::vector<std::size_t> counts(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
  std::size_t total = 0;
  for (int r = 0; r < n; ++r) {
    counts[std::size_t(r)] = is_canonical_holder(s, r) ? std::size_t(s.local_numel(r)) : 0;
    displs[std::size_t(r)] = total;
    total += counts[std::size_t(r)];
  }
  const std::size_t es = esize(s);
  Buffer send(mc.memory(), world.rank() == root ? total * es : 0);
  if (world.rank() == root) {
    std::vector<std::byte> packed(total * es);
    for (int r = 0; r < n; ++r) {
      if (counts[std::size_t(r)] == 0) continue;
      const std::vector<std::byte> block = slice_global(s.meta(), global_host, s.local_box(r));
      std::memcpy(packed.data() + displs[std::size_t(r)] * es, block.data(), block.size());
    }
    mc.memory().copy_from_host(send.data(), packed.data(), packed.size());
  }
  const int me = world.rank();
  Buffer local(mc.memory(), std::size_t(s.local_numel(me)) * es);
  world.scatterv(send.data(), counts, displs, local.data(), counts[std::size_t(me)], s.meta().dtype, root);
  const std::vector<int> coord = s.mesh().coord(me);
  bool zero = false;
  for (int i = 0; i < s.mesh().ndim(); ++i) {
    const Placement& p = s.placement(i);
    if (p.is_shard()) continue;
    // Ranks off coordinate 0 of a later dim may receive a placeholder here; the broadcast
    // along that later dim overwrites it with the real block.
    mc.dim(i).broadcast(local.data(), std::size_t(s.local_numel(me)), s.meta().dtype, 0);
    if (p.is_partial() && p.op == ReduceOp::Sum && coord[std::size_t(i)] != 0) zero = true;
  }
  if (zero) mc.memory().fill_zero(local.data(), local.size());  // sum-partial reference form
  return ShardedTensor(std::move(s), me, std::move(local));
}

std::vector<std::byte> ShardedTensor::local_to_host() const {
  std::vector<std::byte> out(local_.size());
  if (!out.empty()) local_.space()->copy_to_host(out.data(), local_.data(), out.size());
  return out;
}

namespace {
// Copy of a tensor's local block (the executor consumes its input).
ShardedTensor clone(MeshCommunicator& mc, const ShardedTensor& t) {
  Buffer b(mc.memory(), t.local().size());
  mc.memory().copy(b.data(), t.local().data(), b.size());
  return ShardedTensor(t.spec(), t.rank(), std::move(b));
}

// Replace Partial dims by Replicate (reducing), so every block holds final values.
ShardedTensor reduced(MeshCommunicator& mc, const ShardedTensor& t) {
  if (!t.spec().has_partial()) return clone(mc, t);
  const TensorSpec target(t.spec().mesh(), without_partials(t.spec()), t.spec().meta());
  return redistribute(mc, clone(mc, t), target);
}

struct GatherLayout {
  std::vector<std::size_t> counts, displs;
  std::size_t total = 0;
};
GatherLayout gather_layout(const TensorSpec& s) {
  GatherLayout g;
  const int n = s.mesh().size();
  g.counts.resize(static_cast<std::size_t>(n));
  g.displs.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    g.counts[std::size_t(r)] = is_canonical_holder(s, r) ? std::size_t(s.local_numel(r)) : 0;
    g.displs[std::size_t(r)] = g.total;
    g.total += g.counts[std::size_t(r)];
  }
  return g;
}
}  // namespace

std::vector<std::byte> ShardedTensor::gather_to_root(MeshCommunicator& mc, int root) const {
  const ShardedTensor t = reduced(mc, *this);
  const GatherLayout g = gather_layout(t.spec());
  const std::size_t es = esize(t.spec());
  Communicator& world = mc.world();
  Buffer recv(mc.memory(), world.rank() == root ? g.total * es : 0);
  world.gatherv(t.local().data(), g.counts[std::size_t(world.rank())], recv.data(), g.counts,
                g.displs, t.spec().meta().dtype, root);
  if (world.rank() != root) return {};
  std::vector<std::byte> blocks(g.total * es);
  if (!blocks.empty()) mc.memory().copy_to_host(blocks.data(), recv.data(), blocks.size());
  return assemble(t.spec(), blocks, g.displs);
}

std::vector<std::byte> ShardedTensor::gather_to_all(MeshCommunicator& mc) const {
  const ShardedTensor t = reduced(mc, *this);
  const GatherLayout g = gather_layout(t.spec());
  const std::size_t es = esize(t.spec());
  Buffer recv(mc.memory(), g.total * es);
  mc.world().all_gatherv(t.local().data(), g.counts[std::size_t(mc.rank())], recv.data(), g.counts,
                         g.displs, t.spec().meta().dtype);
  std::vector<std::byte> blocks(g.total * es);
  if (!blocks.empty()) mc.memory().copy_to_host(blocks.data(), recv.data(), blocks.size());
  return assemble(t.spec(), blocks, g.displs);
}

}  // namespace shardcal
