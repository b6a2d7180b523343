// What one plan step moves (shardcal/plan.hpp: describe_step). The executor passes exactly
// these counts to the collectives (core/src/execute.cpp computes them with the same box
// arithmetic); tests/unit/test_step_traffic.cpp checks them against an element-by-element count.
#include <algorithm>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "shardcal/error.hpp"
#include "shardcal/plan.hpp"

namespace shardcal {

std::vector<std::int64_t> step_group_counts(const Step& step, int rank) {
  const int i = step.mesh_dim;
  const std::vector<int> g = step.before.mesh().group(rank, {i});
  const std::size_t m = g.size();
  std::vector<std::int64_t> c;
  switch (step.kind) {
    case StepKind::AllGather:
      for (int r : g) c.push_back(step.before.local_numel(r));
      break;
    case StepKind::AllReduce: c.assign(m, step.before.local_numel(rank)); break;
    case StepKind::ReduceScatter:
      for (int r : g) c.push_back(step.after.local_numel(r));
      break;
    case StepKind::AllToAll:
      c.assign(m * m, 0);
      for (std::size_t s = 0; s < m; ++s) {
        const Box from = step.before.local_box(g[s]);
        for (std::size_t d = 0; d < m; ++d)
          c[s * m + d] = intersect(from, step.after.local_box(g[d])).numel();
      }
      break;
    case StepKind::LocalSlice:
    case StepKind::LocalPartial:
    case StepKind::LocalEmbedPartial: break;
  }
  return c;
}

bool pieces_contiguous(const Box& block, int dim) {
  for (int x = 0; x < dim; ++x)
    if (block.shape[std::size_t(x)] != 1) return false;
  return true;
}

std::int64_t step_copy_bytes(const Step& step, int rank) {
  const std::int64_t es = std::int64_t(dtype_size(step.before.meta().dtype));
  switch (step.kind) {
    case StepKind::AllGather:
      return pieces_contiguous(step.after.local_box(rank), step.before.placement(step.mesh_dim).dim)
                 ? 0
                 : step.after.local_numel(rank) * es;
    case StepKind::ReduceScatter:
      return pieces_contiguous(step.before.local_box(rank), step.after.placement(step.mesh_dim).dim)
                 ? 0
                 : step.before.local_numel(rank) * es;
    case StepKind::AllToAll:
      return (step.before.local_numel(rank) + step.after.local_numel(rank)) * es;
    case StepKind::AllReduce:
    case StepKind::LocalSlice:
    case StepKind::LocalPartial:
    case StepKind::LocalEmbedPartial: return 0;
  }
  return 0;
}

namespace {

// Describing a step per distinct group shape. A rank's block is a product over tensor dims of
// one interval each; mesh dim j (j != the step's dim i) moves only the interval of the tensor dim
// it shards, so the groups along i differ only through (a) the extents the other mesh dims leave
// on tensor dims the step does not touch, whose product F scales every count, and (b) the parent
// extent the outer mesh dims leave on the (at most two) tensor dims the step splits or joins
// (step_problem forbids inner mesh dims there). Each of these is a histogram over coordinates:
// value -> (how many coordinate tuples give it, the smallest row-major group color among them).
// Coordinates of different tensor dims are independent, so the groups are the product of the
// histograms, and the smallest color of a product class is the sum of the smallest colors.
struct Bin {
  std::int64_t value = 0;
  bool ones = true;  // untouched dims before the step's contiguity dim all have extent 1
  std::int64_t count = 0;
  std::int64_t color = 0;
};

void add_bin(std::vector<Bin>& h, const Bin& b) {
  for (Bin& x : h)
    if (x.value == b.value && x.ones == b.ones) {
      x.count += b.count;
      x.color = std::min(x.color, b.color);
      return;
    }
  h.push_back(b);
}

// Piece sizes of `parent` split m ways by placement p (torch.chunk or explicit sizes).
void piece_sizes(std::int64_t parent, int m, const Placement& p, std::vector<std::int64_t>& out) {
  out.resize(std::size_t(m));
  for (int k = 0; k < m; ++k)
    out[std::size_t(k)] = p.sizes.empty() ? chunk_piece(parent, m, k).size : p.sizes[std::size_t(k)];
}

// Replaces `h` by its split over mesh dim j (extent m, stride = group-color stride of j).
void split_bins(std::vector<Bin>& h, std::vector<Bin>& tmp, std::vector<std::int64_t>& sizes,
                const Placement& p, int m, std::int64_t stride, bool ones_dim) {
  tmp.clear();
  for (const Bin& b : h) {
    piece_sizes(b.value, m, p, sizes);
    for (int k = 0; k < m; ++k) {
      const std::int64_t size = sizes[std::size_t(k)];
      add_bin(tmp, Bin{size, b.ones && (!ones_dim || size == 1), b.count, b.color + k * stride});
    }
  }
  h.swap(tmp);
}

// The send matrix of one all_to_all group, entry by entry: rank x sends rank y cell(x, y)
// elements. F is the group's untouched product; `before`/`after` are its pieces of the joined /
// split dims. S(d) -> S(d): pieces overlap as intervals; S(a) -> S(b): outer product.
struct A2AMatrix {
  std::int64_t F = 0;
  bool same_dim = false;
  std::vector<std::int64_t> before, after, start_before, start_after;

  void set(std::int64_t f, bool same, const std::vector<std::int64_t>& b,
           const std::vector<std::int64_t>& a) {
    F = f, same_dim = same, before = b, after = a;
    start_before.assign(1, 0), start_after.assign(1, 0);
    for (std::int64_t v : before) start_before.push_back(start_before.back() + v);
    for (std::int64_t v : after) start_after.push_back(start_after.back() + v);
  }
  std::int64_t cell(std::size_t x, std::size_t y) const {
    if (!same_dim) return F * before[x] * after[y];
    const std::int64_t lo = std::max(start_before[x], start_after[y]);
    const std::int64_t hi = std::min(start_before[x + 1], start_after[y + 1]);
    return F * std::max<std::int64_t>(0, hi - lo);
  }
};

}  // namespace

// What the steps out of one (placements, mesh dim) share, from prepare(), and buffers that keep
// their capacity between describes.
struct StepDescriber::Impl {
  const DeviceMesh* mesh = nullptr;
  const TensorMeta* meta = nullptr;
  std::span<const Placement* const> before;
  int i = 0;
  int a = -1;                        // tensor dim the steps join (the source shards), or -1
  std::vector<std::int64_t> stride;  // group-color strides: row-major over mesh dims != i
  std::int64_t free_mult = 1;        // mesh dims != i that shard nothing: every coordinate alike
  std::vector<Bin> pa;               // parent extents of tensor dim a (outer mesh dims)
  // Per tensor dim d != a, built on first use (ready[d]): its extents over the mesh dims != i
  // that shard it (split[d]: some do).
  std::vector<std::vector<Bin>> hist;
  std::vector<char> split, ready;
  std::vector<Bin> untouched, tmp, pb;
  std::vector<std::int64_t> c, first, before_a, after_b, rows, cols, diag, sizes;
  A2AMatrix a2a, first_a2a;

  void build_hist(int d) {
    std::vector<Bin>& h = hist[std::size_t(d)];
    h.clear();
    h.push_back(Bin{meta->shape[std::size_t(d)], true, 1, 0});
    for (int j = 0; j < mesh->ndim(); ++j) {
      if (j == i || !before[std::size_t(j)]->is_shard(d)) continue;
      split_bins(h, tmp, sizes, *before[std::size_t(j)], mesh->extent(j), stride[std::size_t(j)],
                 false);
      split[std::size_t(d)] = 1;
    }
    ready[std::size_t(d)] = 1;
  }

  // Replaces `h` by the parent extents of tensor dim d (d < 0: one extent 1).
  void parent_hist(int d, std::vector<Bin>& h) {
    h.clear();
    h.push_back(Bin{d >= 0 ? meta->shape[std::size_t(d)] : 1, true, 1, 0});
    if (d < 0) return;
    for (int j = 0; j < i; ++j)
      if (before[std::size_t(j)]->is_shard(d))
        split_bins(h, tmp, sizes, *before[std::size_t(j)], mesh->extent(j), stride[std::size_t(j)],
                   false);
  }
};

StepDescriber::StepDescriber() : impl_(std::make_unique<Impl>()) {}
StepDescriber::~StepDescriber() = default;

void StepDescriber::prepare(const DeviceMesh& mesh, const TensorMeta& meta,
                            std::span<const Placement* const> before, int mesh_dim) {
  Impl& s = *impl_;
  s.mesh = &mesh, s.meta = &meta, s.before = before, s.i = mesh_dim;
  const int i = mesh_dim;
  const int nd = mesh.ndim();
  const Placement& pi_before = *before[std::size_t(i)];
  s.a = pi_before.is_shard() ? pi_before.dim : -1;
  s.stride.resize(std::size_t(nd));
  std::int64_t acc = 1;
  for (int j = nd - 1; j >= 0; --j) {
    s.stride[std::size_t(j)] = j == i ? 0 : acc;
    if (j != i) acc *= mesh.extent(j);
  }
  s.free_mult = 1;
  for (int j = 0; j < nd; ++j)
    if (j != i && !before[std::size_t(j)]->is_shard()) s.free_mult *= mesh.extent(j);
  const std::size_t ndim = meta.shape.size();
  s.hist.resize(ndim);
  s.split.assign(ndim, 0);
  s.ready.assign(ndim, 0);
  s.parent_hist(s.a, s.pa);
}

StepTraffic describe_step(const Step& step) {
  if (const std::string why = step_problem(step); !why.empty())
    throw Error("cannot describe step on mesh dim " + std::to_string(step.mesh_dim) + " (" +
                step_kind_name(step.kind) + "): " + why);
  return describe_legal_step(step);
}

StepTraffic describe_legal_step(const Step& step) {
  const std::vector<Placement>& ps = step.before.placements();
  const Placement* small[16];
  std::vector<const Placement*> big;
  const Placement** before = small;
  if (ps.size() > 16) big.resize(ps.size()), before = big.data();
  for (std::size_t j = 0; j < ps.size(); ++j) before[j] = &ps[j];
  StepTraffic t;
  describe_legal_step_into(step.before.mesh(), step.before.meta(),
                           std::span<const Placement* const>(before, ps.size()), step.mesh_dim,
                           step.kind, step.after.placement(step.mesh_dim), t);
  return t;
}

void describe_legal_step_into(const DeviceMesh& mesh, const TensorMeta& meta,
                              std::span<const Placement* const> before, int mesh_dim,
                              StepKind kind, const Placement& after, StepTraffic& t) {
  thread_local StepDescriber d;
  d.prepare(mesh, meta, before, mesh_dim);
  d.describe(kind, after, t);
}

void StepDescriber::describe(StepKind kind, const Placement& after, StepTraffic& t) {
  Impl& s = *impl_;
  if (!s.mesh)  // a misuse, not bad input: describe() reads what prepare() computed
    throw Error("StepDescriber::describe called before prepare()");
  const DeviceMesh& mesh = *s.mesh;
  const int i = s.i;
  {
    // Reset every field, keeping counts' capacity (the search reuses one StepTraffic).
    std::vector<std::int64_t> keep = std::move(t.counts);
    t = StepTraffic{};
    t.counts = std::move(keep);
    t.counts.clear();
  }
  t.kind = kind;
  t.collective = step_collective(kind);
  t.mesh_dim = i;
  t.group_size = mesh.extent(i);
  t.groups = mesh.size() / t.group_size;
  t.elem_size = dtype_size(s.meta->dtype);
  const std::int64_t es = std::int64_t(t.elem_size);
  const std::size_t m = std::size_t(t.group_size);
  const Placement& pi_before = *s.before[std::size_t(i)];
  const Placement& pi_after = after;
  const int a = s.a;                                     // tensor dim the step joins
  const int b = pi_after.is_shard() ? pi_after.dim : -1;  // tensor dim the step splits
  // pieces_contiguous's dim for the executor's pack rule (step_copy_bytes).
  const int cdim = kind == StepKind::AllGather       ? a
                   : kind == StepKind::ReduceScatter ? b
                                                     : -1;
  const Shape& shape = s.meta->shape;
  // Untouched tensor dims, folded into one histogram of (product, ones) values.
  s.untouched.clear();
  s.untouched.push_back(Bin{1, true, 1, 0});
  const std::int64_t free_mult = s.free_mult;
  for (int d = 0; d < int(shape.size()); ++d) {
    if (d == a || d == b) continue;
    if (!s.ready[std::size_t(d)]) s.build_hist(d);
    const bool ones_dim = d < cdim;
    if (!s.split[std::size_t(d)]) {  // one value: scale in place
      const std::int64_t v = shape[std::size_t(d)];
      for (Bin& u : s.untouched) u.value *= v, u.ones = u.ones && (!ones_dim || v == 1);
      continue;
    }
    s.tmp.clear();
    for (const Bin& u : s.untouched)
      for (const Bin& h : s.hist[std::size_t(d)])
        add_bin(s.tmp, Bin{u.value * h.value, u.ones && (!ones_dim || h.value == 1),
                           u.count * h.count, u.color + h.color});
    s.untouched.swap(s.tmp);
  }
  // Parent extents of the split dim (outer mesh dims only); the joined one's are prepared.
  s.parent_hist(a == b ? -1 : b, s.pb);

  bool first = true;
  std::int64_t best = -1;
  t.plain_groups = 0;
  const std::int64_t mm = std::int64_t(m);
  for (const Bin& u : s.untouched)
    for (const Bin& ba : s.pa)
      for (const Bin& bb : s.pb) {
        const std::int64_t count = u.count * ba.count * bb.count * free_mult;
        const std::int64_t color = u.color + ba.color + bb.color;
        const std::int64_t F = u.value;
        const std::int64_t pa = ba.value, pb = a == b ? ba.value : bb.value;
        // Largest output block of any member.
        std::int64_t out_numel = 0;
        switch (kind) {
          case StepKind::AllGather:
          case StepKind::LocalEmbedPartial: out_numel = F * pa; break;
          case StepKind::AllReduce:
          case StepKind::LocalPartial: out_numel = F; break;
          case StepKind::ReduceScatter:
          case StepKind::LocalSlice:
          case StepKind::AllToAll:
            piece_sizes(pb, int(m), pi_after, s.after_b);
            for (std::int64_t x : s.after_b) out_numel = std::max(out_numel, F * x);
            if (a >= 0 && a != b) out_numel *= pa;  // all_to_all S(a) -> S(b): a whole
            break;
        }
        t.max_out_bytes = std::max(t.max_out_bytes, out_numel * es);
        if (!t.collective) continue;
        std::vector<std::int64_t>& c = s.c;
        switch (kind) {
          case StepKind::AllGather:
            piece_sizes(pa, int(m), pi_before, c);
            for (std::int64_t& x : c) x *= F;
            if (!u.ones) t.max_copy_bytes = std::max(t.max_copy_bytes, F * pa * es);
            break;
          case StepKind::ReduceScatter:
            piece_sizes(pb, int(m), pi_after, c);
            for (std::int64_t& x : c) x *= F;
            if (!u.ones) t.max_copy_bytes = std::max(t.max_copy_bytes, F * pb * es);
            break;
          case StepKind::AllReduce: c.assign(m, F); break;
          case StepKind::AllToAll: {
            // The m x m send matrix is never stored (m = 1024 would keep megabytes per rank
            // thread): every entry is a function of (F, before pieces, after pieces).
            piece_sizes(pa, int(m), pi_before, s.before_a);
            // s.after_b holds the after pieces (computed above).
            s.a2a.set(F, a == b, s.before_a, s.after_b);
            s.rows.assign(m, 0), s.cols.assign(m, 0), s.diag.resize(m);
            for (std::size_t x = 0; x < m; ++x)
              for (std::size_t y = 0; y < m; ++y) {
                const std::int64_t v = s.a2a.cell(x, y);
                s.rows[x] += v, s.cols[y] += v;
              }
            for (std::size_t x = 0; x < m; ++x) s.diag[x] = s.a2a.cell(x, x);
            for (std::size_t x = 0; x < m; ++x)
              t.max_copy_bytes = std::max(t.max_copy_bytes, (s.rows[x] + s.cols[x]) * es);
            break;
          }
          default: break;
        }
        const bool a2a = kind == StepKind::AllToAll;
        bool even = false;
        std::int64_t sum = 0;
        if (a2a) {
          // Plain call iff the whole m x m matrix is equal (as execute.cpp checks it).
          const std::int64_t c00 = s.a2a.cell(0, 0);
          even = true;
          for (std::size_t x = 0; x < m && even; ++x)
            for (std::size_t y = 0; y < m && even; ++y) even = s.a2a.cell(x, y) == c00;
          for (std::size_t x = 0; x < m; ++x) sum += s.rows[x];
          if (first) {
            s.first_a2a = s.a2a, first = false;
          } else if (t.groups_identical) {
            for (std::size_t x = 0; x < m && t.groups_identical; ++x)
              for (std::size_t y = 0; y < m && t.groups_identical; ++y)
                t.groups_identical = s.a2a.cell(x, y) == s.first_a2a.cell(x, y);
          }
        } else {
          if (first) s.first.assign(c.begin(), c.end()), first = false;
          else if (t.groups_identical && c != s.first) t.groups_identical = false;
          // The executor's per-group choice: plain call iff this group's counts are all equal.
          even = std::adjacent_find(c.begin(), c.end(), std::not_equal_to<>()) == c.end();
          for (std::int64_t x : c) sum += x;
        }
        if (even) t.plain_groups += int(count);
        else t.uniform = false;
        std::int64_t bytes = 0;
        switch (kind) {
          case StepKind::AllGather:
          case StepKind::ReduceScatter: bytes = sum * es; break;
          case StepKind::AllReduce: bytes = c[0] * es; break;
          case StepKind::AllToAll:
            for (std::size_t x = 0; x < m; ++x) bytes = std::max(bytes, s.rows[x] * es);
            break;
          default: break;
        }
        if (bytes > best || (bytes == best && color < t.heaviest_group)) {
          best = bytes;
          t.bytes = bytes;
          if (a2a) {
            t.counts.resize(m * m);
            for (std::size_t x = 0; x < m; ++x)
              for (std::size_t y = 0; y < m; ++y)
                t.counts[x * m + y] = s.a2a.cell(x, y);
          } else {
            t.counts.assign(c.begin(), c.end());
          }
          t.heaviest_group = int(color);
          t.heaviest_uniform = even;
        }
        for (std::size_t p = 0; p < m; ++p) {
          std::int64_t send = 0, recv = 0;
          switch (kind) {
            case StepKind::AllGather: send = c[p] * (mm - 1), recv = sum - c[p]; break;
            case StepKind::ReduceScatter: send = sum - c[p], recv = c[p] * (mm - 1); break;
            case StepKind::AllReduce: send = recv = c[p] * (mm - 1); break;
            case StepKind::AllToAll:
              send = s.rows[p] - s.diag[p], recv = s.cols[p] - s.diag[p];
              break;
            default: break;
          }
          t.max_send_bytes = std::max(t.max_send_bytes, send * es);
          t.max_recv_bytes = std::max(t.max_recv_bytes, recv * es);
        }
      }
}

}  // namespace shardcal
