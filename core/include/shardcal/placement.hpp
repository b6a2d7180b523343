#pragma once
// Placements: how one mesh dim lays the tensor out. Text form (CLI and JSON):
//   S(d)            shard tensor dim d, torch.chunk sizes (ceil; trailing shards may be empty)
//   S(d)[3,3,2,0]   shard tensor dim d with explicit sizes, one per coordinate of the mesh dim
//   R               replicate
//   P / P(sum) / P(avg) / P(max) / P(min)   partial values awaiting a reduction
// A spec has one placement per mesh dim, comma separated: "S(0)[3,7],S(1)".
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcal/dtype.hpp"

namespace shardcal {

struct Placement {
  enum class Kind : unsigned char { Shard, Replicate, Partial };
  Kind kind = Kind::Replicate;
  int dim = -1;                        // tensor dim, Shard only
  std::vector<std::int64_t> sizes;     // explicit shard sizes, Shard only; empty = chunk
  ReduceOp op = ReduceOp::Sum;         // Partial only

  static Placement shard(int d, std::vector<std::int64_t> sizes = {}) {
    return {Kind::Shard, d, std::move(sizes), ReduceOp::Sum};
  }
  static Placement replicate() { return {}; }
  static Placement partial(ReduceOp op = ReduceOp::Sum) { return {Kind::Partial, -1, {}, op}; }

  bool is_shard() const { return kind == Kind::Shard; }
  bool is_shard(int d) const { return kind == Kind::Shard && dim == d; }
  bool is_replicate() const { return kind == Kind::Replicate; }
  bool is_partial() const { return kind == Kind::Partial; }

  std::string to_string() const;
  bool operator==(const Placement&) const = default;  // textual identity (see layout for layout
                                                      // equivalence of chunk vs explicit sizes)
};

// Parse "S(0)[3,7],S(1)". Errors name the offending text and its character position.
std::vector<Placement> parse_placements(std::string_view text);
std::string placements_to_string(const std::vector<Placement>& ps);

}  // namespace shardcal
