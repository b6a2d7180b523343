#pragma once
// Tensor metadata and the layout of a sharded tensor. Every function here is pure: any rank can
// compute any rank's local shape and offset with no communication, also a rank that holds
// nothing. Nested sharding (several mesh dims shard one tensor dim) splits in mesh-dim order:
// the outer mesh dim splits the extent, each inner one splits the piece it is given.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardcal/dtype.hpp"
#include "shardcal/mesh.hpp"
#include "shardcal/placement.hpp"

namespace shardcal {

using Shape = std::vector<std::int64_t>;

std::int64_t numel(const Shape& s);
std::string shape_to_string(const Shape& s);  // "10x7"; "" for a 0-d tensor
Shape parse_shape(std::string_view text);     // "10x7", "0x3", "5"

struct TensorMeta {
  Shape shape;
  DType dtype = DType::F32;
  std::int64_t numel() const { return shardcal::numel(shape); }
  std::int64_t nbytes() const { return numel() * std::int64_t(dtype_size(dtype)); }
  bool operator==(const TensorMeta&) const = default;
};

// A hyper-rectangle of a tensor: global offset and extent per dim.
struct Box {
  Shape offset;
  Shape shape;
  std::int64_t numel() const { return shardcal::numel(shape); }
  bool empty() const { return numel() == 0; }
  bool operator==(const Box&) const = default;
};
Box intersect(const Box& a, const Box& b);  // empty box (some extent 0) when disjoint

// [start, start+size) pieces of an extent split `parts` ways: torch.chunk semantics, or the
// explicit sizes (which must sum to `extent`).
struct Piece {
  std::int64_t start;
  std::int64_t size;
};
// Piece k of torch.chunk(extent, parts): ceil-sized chunks; trailing ones may be short or
// empty. The one place this arithmetic lives.
Piece chunk_piece(std::int64_t extent, int parts, int k);
std::vector<Piece> split_extent(std::int64_t extent, int parts,
                                const std::vector<std::int64_t>& explicit_sizes);

class TensorSpec {
 public:
  TensorSpec() = default;
  // Validates; throws Error saying what is wrong (placement count, dim out of range, sizes that
  // do not sum to the extent they split, wrong number of sizes, negative sizes).
  TensorSpec(DeviceMesh mesh, std::vector<Placement> placements, TensorMeta meta);

  // "mesh=2x4;shape=10x7;dtype=f32;placements=S(0)[3,7],S(1)" — used to ship a spec to ranks
  // that have nothing, and to hash specs for the cross-rank metadata check.
  std::string serialize() const;
  static TensorSpec deserialize(std::string_view text);
  std::uint64_t hash() const;  // FNV-1a of serialize(), stable across processes

  const DeviceMesh& mesh() const { return mesh_; }
  const std::vector<Placement>& placements() const { return placements_; }
  const Placement& placement(int mesh_dim) const { return placements_.at(std::size_t(mesh_dim)); }
  const TensorMeta& meta() const { return meta_; }
  int ndim() const { return int(meta_.shape.size()); }

  // The block of the global tensor that `rank` holds (Replicate/Partial dims do not split).
  Box local_box(int rank) const;
  Shape local_shape(int rank) const { return local_box(rank).shape; }
  std::int64_t local_numel(int rank) const { return local_box(rank).numel(); }
  std::int64_t local_nbytes(int rank) const {
    return local_numel(rank) * std::int64_t(dtype_size(meta_.dtype));
  }

  // The extent of tensor dim `tdim` that mesh dim `mesh_dim` splits for `rank` (what its
  // outer mesh dims left), and the resulting pieces along that mesh dim.
  Piece parent_extent(int rank, int mesh_dim, int tdim) const;
  std::vector<Piece> pieces(int rank, int mesh_dim) const;  // mesh_dim must be a Shard

  // Same placement on `mesh_dim` up to chunk-vs-explicit spelling of identical sizes.
  bool same_layout_on(int mesh_dim, const Placement& other) const;

  TensorSpec with_placement(int mesh_dim, Placement p) const;  // validates the result
  bool has_partial() const;

 private:
  void validate() const;
  DeviceMesh mesh_;
  std::vector<Placement> placements_;
  TensorMeta meta_;
};

}  // namespace shardcal
