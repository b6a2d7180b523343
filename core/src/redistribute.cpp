#include "shardcal/redistribute.hpp"

#include <algorithm>
#include <set>

#include "shardcal/error.hpp"

namespace shardcal {

std::string step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::AllGather: return "all_gather";
    case StepKind::AllReduce: return "all_reduce";
    case StepKind::ReduceScatter: return "reduce_scatter";
    case StepKind::AllToAll: return "all_to_all";
    case StepKind::LocalSlice: return "local_slice";
    case StepKind::LocalPartial: return "local_partial";
  }
  return "?";
}

std::string Step::to_string() const {
  return "mesh dim " + std::to_string(mesh_dim) + ": " + before.placement(mesh_dim).to_string() +
         " -> " + after.placement(mesh_dim).to_string() + "  " + step_kind_name(kind) + "  " +
         std::to_string(bytes) + " B";
}

std::string Plan::to_string() const {
  std::string s = placements_to_string(from.placements()) + " -> " +
                  placements_to_string(to.placements()) + " (" + std::to_string(steps.size()) +
                  " step" + (steps.size() == 1 ? "" : "s") + ")";
  for (const Step& st : steps) s += "\n  " + st.to_string();
  return s;
}

namespace {

std::int64_t max_over_ranks(const TensorSpec& s, std::int64_t (TensorSpec::*f)(int) const) {
  std::int64_t m = 0;
  for (int r = 0; r < s.mesh().size(); ++r) m = std::max(m, (s.*f)(r));
  return m;
}

// Payload per DESIGN §4: all_gather counts its output, the others one rank's input.
std::int64_t step_bytes(StepKind k, const TensorSpec& before, const TensorSpec& after) {
  switch (k) {
    case StepKind::AllGather: return max_over_ranks(after, &TensorSpec::local_nbytes);
    case StepKind::AllReduce:
    case StepKind::ReduceScatter:
    case StepKind::AllToAll: return max_over_ranks(before, &TensorSpec::local_nbytes);
    case StepKind::LocalSlice:
    case StepKind::LocalPartial: return 0;
  }
  return 0;
}

class PlanBuilder {
 public:
  explicit PlanBuilder(const TensorSpec& from) : cur_(from) {}

  void emit(int dim, StepKind kind, Placement to) {
    TensorSpec next = cur_.with_placement(dim, std::move(to));
    Step st{dim, kind, cur_, next, step_bytes(kind, cur_, next)};
    steps_.push_back(std::move(st));
    cur_ = std::move(next);
  }

  // Move mesh dim `i` from its current placement to `target` with one or two steps.
  void transition(int i, const Placement& target) {
    const Placement from = cur_.placement(i);
    using K = Placement::Kind;
    if (from.kind == K::Shard && target.kind == K::Replicate) return emit(i, StepKind::AllGather, target);
    if (from.kind == K::Shard && target.kind == K::Shard) return emit(i, StepKind::AllToAll, target);
    if (from.kind == K::Partial && target.kind == K::Replicate) return emit(i, StepKind::AllReduce, target);
    if (from.kind == K::Partial && target.kind == K::Shard) {
      if (from.op == ReduceOp::Sum || from.op == ReduceOp::Avg || from.op == ReduceOp::Max ||
          from.op == ReduceOp::Min)
        return emit(i, StepKind::ReduceScatter, target);
    }
    if (from.kind == K::Replicate && target.kind == K::Shard) return emit(i, StepKind::LocalSlice, target);
    if (from.kind == K::Replicate && target.kind == K::Partial) return emit(i, StepKind::LocalPartial, target);
    // S -> P and P(op) -> P(other op) go through Replicate.
    if (target.kind == K::Partial) {
      transition(i, Placement::replicate());
      return emit(i, StepKind::LocalPartial, target);
    }
    throw Error("internal: no transition " + from.to_string() + " -> " + target.to_string());
  }

  const TensorSpec& current() const { return cur_; }
  std::vector<Step> take() { return std::move(steps_); }

 private:
  TensorSpec cur_;
  std::vector<Step> steps_;
};

}  // namespace

Plan plan_redistribution(const TensorSpec& from, const TensorSpec& to) {
  if (!(from.mesh() == to.mesh()))
    throw Error("cannot redistribute between meshes " + from.mesh().to_string() + " and " +
                to.mesh().to_string() + ": source and target must use the same mesh");
  if (!(from.meta() == to.meta()))
    throw Error("cannot redistribute a [" + shape_to_string(from.meta().shape) + "] " +
                std::string(dtype_name(from.meta().dtype)) + " tensor into a [" +
                shape_to_string(to.meta().shape) + "] " + std::string(dtype_name(to.meta().dtype)) +
                " spec: shape and dtype must match");
  // Outer mesh dims first, so that when an inner dim is (re)sharded its parent extents are final.
  // A step on mesh dim i is a collective over the group along i; it is only correct when no inner
  // mesh dim shards a tensor dim the step touches (else the group holds interleaved pieces), so
  // such inner dims are gathered first (innermost first) and re-sharded when their turn comes.
  PlanBuilder b(from);
  const int k = from.mesh().ndim();
  for (int i = 0; i < k; ++i) {
    const Placement& target = to.placement(i);
    if (b.current().same_layout_on(i, target)) continue;
    std::set<int> touched;
    if (b.current().placement(i).is_shard()) touched.insert(b.current().placement(i).dim);
    if (target.is_shard()) touched.insert(target.dim);
    for (int j = k - 1; j > i; --j) {
      const Placement& pj = b.current().placement(j);
      if (pj.is_shard() && touched.count(pj.dim)) b.emit(j, StepKind::AllGather, Placement::replicate());
    }
    b.transition(i, target);
  }
  Plan plan{from, to, b.take()};
  // Keep the caller's spelling of the target (chunk vs explicit sizes of the same layout).
  if (!plan.steps.empty()) plan.steps.back().after = to;
  return plan;
}

namespace {

struct StepContext {
  MeshCommunicator& mc;
  const Step& step;
  int rank;
  std::size_t es;
  DType dtype;
  std::vector<int> group;  // world ranks along the step's mesh dim, by coordinate
};

Shape relative(const Shape& global_offset, const Box& frame) {
  Shape r(global_offset.size());
  for (std::size_t d = 0; d < r.size(); ++d) r[d] = global_offset[d] - frame.offset[d];
  return r;
}

// Copy the global box `what` from the block `src` (covering box `src_box`) into the block `dst`
// (covering `dst_box`) in the communicator's memory.
void copy_region(MemorySpace& mem, void* dst, const Box& dst_box, const void* src,
                 const Box& src_box, const Box& what, std::size_t es) {
  if (what.empty()) return;
  mem.copy_box({dst, dst_box.shape, relative(what.offset, dst_box), src, src_box.shape,
                relative(what.offset, src_box), what.shape, es});
}

Buffer run_all_gather(StepContext& c, const Buffer& in) {
  const int m = int(c.group.size());
  const Box out_box = c.step.after.local_box(c.rank);
  std::vector<std::size_t> counts(static_cast<std::size_t>(m)), displs(static_cast<std::size_t>(m));
  std::vector<Box> boxes;
  std::size_t total = 0;
  for (int h = 0; h < m; ++h) {
    boxes.push_back(c.step.before.local_box(c.group[std::size_t(h)]));
    counts[std::size_t(h)] = std::size_t(boxes.back().numel());
    displs[std::size_t(h)] = total;
    total += counts[std::size_t(h)];
  }
  MemorySpace& mem = c.mc.memory();
  Buffer gathered(mem, total * c.es);
  c.mc.dim(c.step.mesh_dim)
      .all_gatherv(in.data(), counts[std::size_t(c.mc.mesh().coord(c.rank)[std::size_t(c.step.mesh_dim)])],
                   gathered.data(), counts, displs, c.dtype);
  // Pieces arrive back to back; when the shard dim is the outermost non-trivial dim they are
  // already in global order, else unpack each into place.
  const int d = c.step.before.placement(c.step.mesh_dim).dim;
  std::int64_t outer = 1;
  for (int e = 0; e < d; ++e) outer *= out_box.shape[std::size_t(e)];
  if (outer == 1) return gathered;
  Buffer out(mem, std::size_t(out_box.numel()) * c.es);
  for (int h = 0; h < m; ++h)
    copy_region(mem, out.data(), out_box, static_cast<std::byte*>(gathered.data()) + displs[std::size_t(h)] * c.es,
                boxes[std::size_t(h)], boxes[std::size_t(h)], c.es);
  return out;
}

Buffer run_all_reduce(StepContext& c, const Buffer& in) {
  Buffer out(c.mc.memory(), in.size());
  c.mc.dim(c.step.mesh_dim)
      .all_reduce(in.data(), out.data(), in.size() / c.es, c.dtype,
                  c.step.before.placement(c.step.mesh_dim).op);
  return out;
}

Buffer run_reduce_scatter(StepContext& c, const Buffer& in) {
  const int m = int(c.group.size());
  const Box in_box = c.step.before.local_box(c.rank);  // same box on every group member
  std::vector<std::size_t> counts(static_cast<std::size_t>(m));
  std::vector<Box> targets;
  std::size_t total = 0;
  for (int h = 0; h < m; ++h) {
    targets.push_back(c.step.after.local_box(c.group[std::size_t(h)]));
    counts[std::size_t(h)] = std::size_t(targets.back().numel());
    total += counts[std::size_t(h)];
  }
  MemorySpace& mem = c.mc.memory();
  const int d = c.step.after.placement(c.step.mesh_dim).dim;
  std::int64_t outer = 1;
  for (int e = 0; e < d; ++e) outer *= in_box.shape[std::size_t(e)];
  const void* send = in.data();
  Buffer packed;
  if (outer != 1) {  // pieces are strided in the input: pack each target's block contiguously
    packed = Buffer(mem, total * c.es);
    std::size_t off = 0;
    for (int h = 0; h < m; ++h) {
      const Box& t = targets[std::size_t(h)];
      copy_region(mem, static_cast<std::byte*>(packed.data()) + off * c.es, t, in.data(), in_box, t, c.es);
      off += counts[std::size_t(h)];
    }
    send = packed.data();
  }
  const int me = c.mc.mesh().coord(c.rank)[std::size_t(c.step.mesh_dim)];
  Buffer out(mem, counts[std::size_t(me)] * c.es);
  c.mc.dim(c.step.mesh_dim)
      .reduce_scatterv(send, out.data(), counts, c.dtype, c.step.before.placement(c.step.mesh_dim).op);
  return out;
}

Buffer run_all_to_all(StepContext& c, const Buffer& in) {
  const int m = int(c.group.size());
  const Box in_box = c.step.before.local_box(c.rank);
  const Box out_box = c.step.after.local_box(c.rank);
  std::vector<std::size_t> sc(static_cast<std::size_t>(m)), sd(static_cast<std::size_t>(m)), rc(static_cast<std::size_t>(m)), rd(static_cast<std::size_t>(m));
  std::vector<Box> send_boxes, recv_boxes;
  std::size_t stotal = 0, rtotal = 0;
  for (int h = 0; h < m; ++h) {
    const int peer = c.group[std::size_t(h)];
    send_boxes.push_back(intersect(in_box, c.step.after.local_box(peer)));
    recv_boxes.push_back(intersect(c.step.before.local_box(peer), out_box));
    sc[std::size_t(h)] = std::size_t(send_boxes.back().numel());
    rc[std::size_t(h)] = std::size_t(recv_boxes.back().numel());
    sd[std::size_t(h)] = stotal;
    rd[std::size_t(h)] = rtotal;
    stotal += sc[std::size_t(h)];
    rtotal += rc[std::size_t(h)];
  }
  MemorySpace& mem = c.mc.memory();
  Buffer send(mem, stotal * c.es), recv(mem, rtotal * c.es);
  for (int h = 0; h < m; ++h)
    copy_region(mem, static_cast<std::byte*>(send.data()) + sd[std::size_t(h)] * c.es, send_boxes[std::size_t(h)],
                in.data(), in_box, send_boxes[std::size_t(h)], c.es);
  c.mc.dim(c.step.mesh_dim).all_to_allv(send.data(), sc, sd, recv.data(), rc, rd, c.dtype);
  Buffer out(mem, std::size_t(out_box.numel()) * c.es);
  for (int h = 0; h < m; ++h)
    copy_region(mem, out.data(), out_box, static_cast<std::byte*>(recv.data()) + rd[std::size_t(h)] * c.es,
                recv_boxes[std::size_t(h)], recv_boxes[std::size_t(h)], c.es);
  return out;
}

Buffer run_local_slice(StepContext& c, const Buffer& in) {
  const Box in_box = c.step.before.local_box(c.rank);
  const Box out_box = c.step.after.local_box(c.rank);
  Buffer out(c.mc.memory(), std::size_t(out_box.numel()) * c.es);
  copy_region(c.mc.memory(), out.data(), out_box, in.data(), in_box, out_box, c.es);
  return out;
}

Buffer run_local_partial(StepContext& c, Buffer in) {
  const Placement& p = c.step.after.placement(c.step.mesh_dim);
  // Sum: the value lives on coordinate 0 only. Avg/max/min: every coordinate keeps it.
  if (p.op == ReduceOp::Sum && c.mc.mesh().coord(c.rank)[std::size_t(c.step.mesh_dim)] != 0)
    c.mc.memory().fill_zero(in.data(), in.size());
  return in;
}

}  // namespace

ShardedTensor execute_plan(MeshCommunicator& mc, const Plan& plan, ShardedTensor tensor) {
  if (!(plan.from.mesh() == mc.mesh()))
    throw Error("plan is for mesh " + plan.from.mesh().to_string() + " but the communicator's mesh is " +
                mc.mesh().to_string());
  if (tensor.spec().serialize() != plan.from.serialize())
    throw Error("plan starts from " + plan.from.serialize() + " but the tensor is " +
                tensor.spec().serialize());
  const int rank = mc.rank();
  Buffer cur = std::move(tensor.local());
  for (const Step& st : plan.steps) {
    StepContext c{mc, st, rank, dtype_size(st.before.meta().dtype), st.before.meta().dtype,
                  mc.mesh().group(rank, {st.mesh_dim})};
    switch (st.kind) {
      case StepKind::AllGather: cur = run_all_gather(c, cur); break;
      case StepKind::AllReduce: cur = run_all_reduce(c, cur); break;
      case StepKind::ReduceScatter: cur = run_reduce_scatter(c, cur); break;
      case StepKind::AllToAll: cur = run_all_to_all(c, cur); break;
      case StepKind::LocalSlice: cur = run_local_slice(c, cur); break;
      case StepKind::LocalPartial: cur = run_local_partial(c, std::move(cur)); break;
    }
  }
  return ShardedTensor(plan.to, rank, std::move(cur));
}

ShardedTensor redistribute(MeshCommunicator& mc, ShardedTensor tensor, const TensorSpec& to) {
  const Plan plan = plan_redistribution(tensor.spec(), to);
  return execute_plan(mc, plan, std::move(tensor));
}

}  // namespace shardcal
