#include "shardcal/layout.hpp"

#include <algorithm>
#include <charconv>

#include "shardcal/error.hpp"
#include "shardcal/hash.hpp"

namespace shardcal {

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t e : s) n *= e;
  return n;
}

std::string shape_to_string(const Shape& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

Shape parse_shape(std::string_view text) {
  Shape shape;
  if (text.empty()) return shape;  // 0-d tensor
  std::size_t pos = 0;
  while (true) {
    const std::size_t x = text.find('x', pos);
    const std::string_view part = text.substr(pos, x == std::string_view::npos ? text.npos : x - pos);
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || v < 0)
      throw Error("bad tensor shape '" + std::string(text) + "' at character " +
                  std::to_string(pos + 1) +
                  ": expected non-negative extents separated by 'x', e.g. '10x7'");
    shape.push_back(v);
    if (x == std::string_view::npos) break;
    pos = x + 1;
  }
  std::int64_t total = 1;
  for (std::int64_t e : shape) {
    if (e != 0 && total > (std::int64_t(1) << 50) / e)
      throw Error("tensor shape '" + std::string(text) + "' has more than 2^50 elements");
    total *= e;
  }
  return shape;
}

Box intersect(const Box& a, const Box& b) {
  Box r{a.offset, a.shape};
  for (std::size_t d = 0; d < a.shape.size(); ++d) {
    const std::int64_t lo = std::max(a.offset[d], b.offset[d]);
    const std::int64_t hi = std::min(a.offset[d] + a.shape[d], b.offset[d] + b.shape[d]);
    r.offset[d] = lo;
    r.shape[d] = std::max<std::int64_t>(0, hi - lo);
  }
  return r;
}

Piece chunk_piece(std::int64_t extent, int parts, int k) {
  const std::int64_t chunk = (extent + parts - 1) / parts;
  const std::int64_t start = std::min(extent, chunk * std::int64_t(k));
  return {start, std::min(chunk, extent - start)};
}

std::vector<Piece> split_extent(std::int64_t extent, int parts,
                                const std::vector<std::int64_t>& explicit_sizes) {
  std::vector<Piece> out(std::size_t(parts), Piece{0, 0});
  if (!explicit_sizes.empty()) {
    std::int64_t start = 0;
    for (int k = 0; k < parts; ++k) {
      out[std::size_t(k)] = {start, explicit_sizes[std::size_t(k)]};
      start += explicit_sizes[std::size_t(k)];
    }
    return out;
  }
  for (int k = 0; k < parts; ++k) out[std::size_t(k)] = chunk_piece(extent, parts, k);
  return out;
}

namespace {

// Ranks per combination of the coordinates of mesh dims before `mesh_dim` (row-major): stepping
// by it visits each outer coordinate tuple once, the inner coordinates all 0.
int inner_ranks(const DeviceMesh& mesh, int mesh_dim) {
  int n = 1;
  for (int j = mesh_dim; j < mesh.ndim(); ++j) n *= mesh.extent(j);
  return n;
}

// Piece k of split_extent(extent, parts, explicit_sizes), without building the others.
Piece split_piece(std::int64_t extent, int parts, const std::vector<std::int64_t>& explicit_sizes,
                  int k) {
  if (!explicit_sizes.empty()) {
    std::int64_t start = 0;
    for (int j = 0; j < k; ++j) start += explicit_sizes[std::size_t(j)];
    return {start, explicit_sizes[std::size_t(k)]};
  }
  return chunk_piece(extent, parts, k);
}

}  // namespace

TensorSpec::TensorSpec(DeviceMesh mesh, std::vector<Placement> placements, TensorMeta meta)
    : mesh_(std::move(mesh)), placements_(std::move(placements)), meta_(std::move(meta)) {
  validate();
}

void TensorSpec::validate() const {
  // TensorMeta built in code skips parse_shape's checks: repeat them here.
  std::int64_t total = 1;
  for (std::int64_t e : meta_.shape) {
    if (e < 0) throw Error("tensor shape [" + shape_to_string(meta_.shape) + "] has a negative extent");
    if (e != 0 && total > (std::int64_t(1) << 50) / e)
      throw Error("tensor shape [" + shape_to_string(meta_.shape) + "] has more than 2^50 elements");
    total *= e;
  }
  // Built only on error: specs are constructed in the planner's inner loop.
  auto where = [&] { return "placements \"" + placements_to_string(placements_) + "\""; };
  if (int(placements_.size()) != mesh_.ndim())
    throw Error(where() + " give " + std::to_string(placements_.size()) + " placement(s) but mesh " +
                mesh_.to_string() + " has " + std::to_string(mesh_.ndim()) +
                " dim(s): give one placement per mesh dim, comma separated (e.g. \"S(0),R\")");
  for (int i = 0; i < mesh_.ndim(); ++i) {
    const Placement& p = placements_[std::size_t(i)];
    if (!p.is_shard()) continue;
    auto item = [&] { return "placement " + std::to_string(i) + " \"" + p.to_string() + "\""; };
    if (ndim() == 0)
      throw Error(where() + ": " + item() + " shards a 0-d tensor (a scalar): use R or P for it");
    if (p.dim < 0 || p.dim >= ndim())
      throw Error(where() + ": " + item() + " shards tensor dim " + std::to_string(p.dim) +
                  ", out of range for a " + std::to_string(ndim()) + "-d tensor of shape [" +
                  shape_to_string(meta_.shape) + "] (valid dims: 0.." + std::to_string(ndim() - 1) + ")");
    if (p.sizes.empty()) continue;
    if (int(p.sizes.size()) != mesh_.extent(i))
      throw Error(where() + ": " + item() + " lists " + std::to_string(p.sizes.size()) +
                  " shard sizes but mesh dim " + std::to_string(i) + " has " +
                  std::to_string(mesh_.extent(i)) + " ranks: give one size per rank of that mesh dim");
    std::int64_t sum = 0;
    for (std::int64_t s : p.sizes) {
      if (s < 0)
        throw Error(where() + ": " + item() + " has a negative shard size " + std::to_string(s));
      if (s > meta_.shape[std::size_t(p.dim)] || sum > meta_.shape[std::size_t(p.dim)])
        throw Error(where() + ": " + item() + " has shard sizes larger than tensor dim " +
                    std::to_string(p.dim) + " (extent " +
                    std::to_string(meta_.shape[std::size_t(p.dim)]) + ")");
      sum += s;
    }
  }
  // Explicit sizes must sum to the extent they split, for every piece the outer dims leave.
  for (int i = 0; i < mesh_.ndim(); ++i) {
    const Placement& p = placements_[std::size_t(i)];
    if (!p.is_shard() || p.sizes.empty()) continue;
    std::int64_t sum = 0;
    for (std::int64_t s : p.sizes) sum += s;
    // The parent extent depends on the outer coordinates only: one rank per outer tuple.
    const int inner = inner_ranks(mesh_, i);
    for (int r = 0; r < mesh_.size(); r += inner) {
      const Piece parent = parent_extent(r, i, p.dim);
      if (parent.size == sum) continue;
      const bool nested = parent.size != meta_.shape[std::size_t(p.dim)];
      std::vector<int> c = mesh_.coord(r);
      std::string coord = "[";
      for (int d = 0; d < mesh_.ndim(); ++d)
        coord += (d ? "," : "") + (d < i ? std::to_string(c[std::size_t(d)]) : std::string("*"));
      coord += "]";
      throw Error(where() + ": " + "placement " + std::to_string(i) + " \"" + p.to_string() +
                  "\" sizes sum to " + std::to_string(sum) + " but " +
                  (nested ? "the piece of tensor dim " + std::to_string(p.dim) +
                                " it splits (outer mesh dims shard it first; mesh coordinate " +
                                coord + ") has extent "
                          : "tensor dim " + std::to_string(p.dim) + " has extent ") +
                  std::to_string(parent.size));
    }
  }
}

Piece TensorSpec::parent_extent(int rank, int mesh_dim, int tdim) const {
  const std::vector<int> c = mesh_.coord(rank);
  Piece cur{0, meta_.shape.at(std::size_t(tdim))};
  for (int i = 0; i < mesh_dim; ++i) {
    const Placement& p = placements_[std::size_t(i)];
    if (!p.is_shard(tdim)) continue;
    const Piece k = split_piece(cur.size, mesh_.extent(i), p.sizes, c[std::size_t(i)]);
    cur = {cur.start + k.start, k.size};
  }
  return cur;
}

std::vector<Piece> TensorSpec::pieces(int rank, int mesh_dim) const {
  const Placement& p = placement(mesh_dim);
  if (!p.is_shard()) throw Error("internal: pieces() of a non-shard placement");
  const Piece parent = parent_extent(rank, mesh_dim, p.dim);
  std::vector<Piece> out = split_extent(parent.size, mesh_.extent(mesh_dim), p.sizes);
  for (Piece& k : out) k.start += parent.start;
  return out;
}

Box TensorSpec::local_box(int rank) const {
  const std::vector<int> c = mesh_.coord(rank);
  Box b{Shape(meta_.shape.size(), 0), meta_.shape};
  for (int i = 0; i < mesh_.ndim(); ++i) {
    const Placement& p = placements_[std::size_t(i)];
    if (!p.is_shard()) continue;
    const std::size_t d = std::size_t(p.dim);
    const Piece k = split_piece(b.shape[d], mesh_.extent(i), p.sizes, c[std::size_t(i)]);
    b.offset[d] += k.start;
    b.shape[d] = k.size;
  }
  return b;
}

bool TensorSpec::same_layout_on(int mesh_dim, const Placement& other) const {
  const Placement& p = placement(mesh_dim);
  if (p.kind != other.kind) return false;
  if (p.is_replicate()) return true;
  if (p.is_partial()) return p.op == other.op;
  if (p.dim != other.dim) return false;
  if (p.sizes == other.sizes) return true;
  // The parent extent depends on the outer coordinates only: one rank per outer tuple.
  const int inner = inner_ranks(mesh_, mesh_dim);
  for (int r = 0; r < mesh_.size(); r += inner) {
    const Piece parent = parent_extent(r, mesh_dim, p.dim);
    const int m = mesh_.extent(mesh_dim);
    if (!other.sizes.empty() && int(other.sizes.size()) != m) return false;
    const auto a = split_extent(parent.size, m, p.sizes);
    const auto b = split_extent(parent.size, m, other.sizes);
    for (int k = 0; k < m; ++k)
      if (a[std::size_t(k)].size != b[std::size_t(k)].size) return false;
  }
  return true;
}

TensorSpec TensorSpec::with_placement(int mesh_dim, Placement p) const {
  std::vector<Placement> ps = placements_;
  ps.at(std::size_t(mesh_dim)) = std::move(p);
  return TensorSpec(mesh_, std::move(ps), meta_);
}

bool TensorSpec::has_partial() const {
  return std::any_of(placements_.begin(), placements_.end(),
                     [](const Placement& p) { return p.is_partial(); });
}

std::string TensorSpec::serialize() const {
  return "mesh=" + mesh_.to_string() + ";shape=" + shape_to_string(meta_.shape) +
         ";dtype=" + std::string(dtype_name(meta_.dtype)) +
         ";placements=" + placements_to_string(placements_);
}

TensorSpec TensorSpec::deserialize(std::string_view text) {
  std::string_view fields[4];
  const char* keys[4] = {"mesh=", "shape=", "dtype=", "placements="};
  std::size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    const std::string_view key = keys[i];
    if (text.substr(pos, key.size()) != key)
      throw Error("bad serialized tensor spec '" + std::string(text) + "': expected '" +
                  std::string(key) + "' at character " + std::to_string(pos + 1));
    pos += key.size();
    const std::size_t end = i < 3 ? text.find(';', pos) : text.size();
    if (end == std::string_view::npos)
      throw Error("bad serialized tensor spec '" + std::string(text) + "': missing ';'");
    fields[i] = text.substr(pos, end - pos);
    pos = end + 1;
  }
  return TensorSpec(DeviceMesh::parse(fields[0]), parse_placements(fields[3]),
                    TensorMeta{parse_shape(fields[1]), parse_dtype(fields[2])});
}

std::uint64_t TensorSpec::hash() const {
  return fnv1a64(serialize());
}

}  // namespace shardcal
