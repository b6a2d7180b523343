#pragma once
// N-d device mesh: global ranks laid out row-major over `shape`. Pure value type; the
// communicators for its sub-groups live in MeshCommunicator.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardcal {

class DeviceMesh {
 public:
  DeviceMesh() = default;
  explicit DeviceMesh(std::vector<int> shape);  // every extent >= 1, at least one dim

  static DeviceMesh parse(std::string_view text);  // "2x4", "8", "2x2x2"
  std::string to_string() const;                   // "2x4"

  int ndim() const { return int(shape_.size()); }
  int size() const { return size_; }
  int extent(int dim) const { return shape_.at(std::size_t(dim)); }
  const std::vector<int>& shape() const { return shape_; }

  std::vector<int> coord(int rank) const;
  int rank_of(const std::vector<int>& coord) const;

  // Ranks that share `rank`'s coordinates on every mesh dim outside `dims`, ordered by their
  // row-major position over `dims` (so group position == coordinate for one dim).
  std::vector<int> group(int rank, const std::vector<int>& dims) const;
  // Which group along `dims` this rank belongs to (0..number of groups-1) and its position in
  // it; exactly the (color, key) pair for MPI_Comm_split / ncclCommSplit.
  int group_color(int rank, const std::vector<int>& dims) const;
  int group_position(int rank, const std::vector<int>& dims) const;

  bool operator==(const DeviceMesh&) const = default;

 private:
  std::vector<int> shape_;
  int size_ = 0;
};

}  // namespace shardcal
