#include "shardcal/mesh.hpp"

#include <algorithm>
#include <charconv>

#include "shardcal/error.hpp"

namespace shardcal {

DeviceMesh::DeviceMesh(std::vector<int> shape) : shape_(std::move(shape)) {
  if (shape_.empty()) throw Error("device mesh needs at least one dim (e.g. '8' or '2x4')");
  size_ = 1;
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] < 1)
      throw Error("device mesh dim " + std::to_string(i) + " has extent " +
                  std::to_string(shape_[i]) + ": every extent must be >= 1");
    if (size_ > (1 << 24) / shape_[i]) throw Error("device mesh too large (more than 2^24 ranks)");
    size_ *= shape_[i];
  }
}

DeviceMesh DeviceMesh::parse(std::string_view text) {
  std::vector<int> shape;
  std::size_t pos = 0;
  while (true) {
    const std::size_t x = text.find('x', pos);
    const std::string_view part = text.substr(pos, x == std::string_view::npos ? text.npos : x - pos);
    int v = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || v < 1)
      throw Error("bad mesh '" + std::string(text) + "' at character " + std::to_string(pos + 1) +
                  ": expected positive extents separated by 'x', e.g. '2x4'");
    shape.push_back(v);
    if (x == std::string_view::npos) break;
    pos = x + 1;
  }
  return DeviceMesh(std::move(shape));
}

std::string DeviceMesh::to_string() const {
  std::string s;
  for (std::size_t i = 0; i < shape_.size(); ++i) s += (i ? "x" : "") + std::to_string(shape_[i]);
  return s;
}

std::vector<int> DeviceMesh::coord(int rank) const {
  if (rank < 0 || rank >= size_)
    throw Error("rank " + std::to_string(rank) + " outside mesh " + to_string());
  std::vector<int> c(shape_.size());
  for (int d = ndim() - 1; d >= 0; --d) {
    c[std::size_t(d)] = rank % shape_[std::size_t(d)];
    rank /= shape_[std::size_t(d)];
  }
  return c;
}

int DeviceMesh::rank_of(const std::vector<int>& c) const {
  if (c.size() != shape_.size()) throw Error("coordinate has wrong number of dims for mesh " + to_string());
  int r = 0;
  for (std::size_t d = 0; d < shape_.size(); ++d) {
    if (c[d] < 0 || c[d] >= shape_[d]) throw Error("coordinate outside mesh " + to_string());
    r = r * shape_[d] + c[d];
  }
  return r;
}

static bool contains(const std::vector<int>& dims, int d) {
  return std::find(dims.begin(), dims.end(), d) != dims.end();
}

std::vector<int> DeviceMesh::group(int rank, const std::vector<int>& dims) const {
  std::vector<int> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  int count = 1;
  for (int d : sorted) count *= extent(d);
  std::vector<int> out;
  out.reserve(std::size_t(count));
  const std::vector<int> base = coord(rank);
  for (int i = 0; i < count; ++i) {
    std::vector<int> c = base;
    int rem = i;
    for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) {
      c[std::size_t(*it)] = rem % extent(*it);
      rem /= extent(*it);
    }
    out.push_back(rank_of(c));
  }
  return out;
}

int DeviceMesh::group_color(int rank, const std::vector<int>& dims) const {
  const std::vector<int> c = coord(rank);
  int color = 0;
  for (int d = 0; d < ndim(); ++d)
    if (!contains(dims, d)) color = color * extent(d) + c[std::size_t(d)];
  return color;
}

int DeviceMesh::group_position(int rank, const std::vector<int>& dims) const {
  const std::vector<int> c = coord(rank);
  int pos = 0;
  for (int d = 0; d < ndim(); ++d)
    if (contains(dims, d)) pos = pos * extent(d) + c[std::size_t(d)];
  return pos;
}

}  // namespace shardcal
