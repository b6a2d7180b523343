// The plan executor (shardcal/redistribute.hpp). Backend-agnostic: it calls the Communicator
// interface and the MemorySpace of the communicator, so the same code drives sim, mpi and nccl.
// Everything that depends only on the plan and the rank (boxes, counts, displacements, which
// call to make, buffer sizes) is computed once in PlanWorkspace; execute_plan only packs, calls
// the collectives and unpacks.
#include <algorithm>
#include <cstring>
#include <limits>

#include "shardcal/error.hpp"
#include "shardcal/redistribute.hpp"

namespace shardcal {

namespace {

// Length of the overlap of two boxes' intervals in tensor dim x.
std::int64_t overlap_1d(const Box& a, const Box& b, std::size_t x) {
  return std::max<std::int64_t>(0, std::min(a.offset[x] + a.shape[x], b.offset[x] + b.shape[x]) -
                                       std::max(a.offset[x], b.offset[x]));
}

// Elements two boxes share (intersect(a, b).numel() without building the box).
std::int64_t overlap_numel(const Box& a, const Box& b) {
  std::int64_t n = 1;
  for (std::size_t x = 0; x < a.shape.size() && n > 0; ++x) n *= overlap_1d(a, b, x);
  return n;
}

// Whether every entry of the all_to_all matrix overlap_numel(from[s], to[d]) is the same.
// When, in every tensor dim, either all `from` intervals or all `to` intervals coincide (an
// S(a) -> S(b) step), the matrix is an outer product U(s) * V(d), decided in O(m); otherwise
// (S(d) -> S(d)) every entry is compared: O(m^2) per member.
bool all_to_all_uniform(const std::vector<Box>& from, const std::vector<Box>& to) {
  const std::size_t m = from.size();
  if (m == 0) return true;
  const std::size_t nd = from[0].shape.size();
  std::vector<char> from_fixed(nd, 1), to_fixed(nd, 1);
  for (std::size_t x = 0; x < nd; ++x)
    for (std::size_t k = 1; k < m; ++k) {
      from_fixed[x] &= char(from[k].offset[x] == from[0].offset[x] && from[k].shape[x] == from[0].shape[x]);
      to_fixed[x] &= char(to[k].offset[x] == to[0].offset[x] && to[k].shape[x] == to[0].shape[x]);
    }
  bool separable = true;
  for (std::size_t x = 0; x < nd; ++x) separable = separable && (from_fixed[x] || to_fixed[x]);
  if (!separable) {
    const std::int64_t c0 = overlap_numel(from[0], to[0]);
    for (std::size_t s = 0; s < m; ++s)
      for (std::size_t d = 0; d < m; ++d)
        if (overlap_numel(from[s], to[d]) != c0) return false;
    return true;
  }
  // Dims where `to` is fixed vary with the sender only (U), the rest with the receiver (V).
  auto factor = [&](const Box& a, const Box& b, bool sender_dims) {
    std::int64_t n = 1;
    for (std::size_t x = 0; x < nd; ++x)
      if (bool(to_fixed[x]) == sender_dims) n *= overlap_1d(a, b, x);
    return n;
  };
  std::vector<std::int64_t> u(m), v(m);
  for (std::size_t k = 0; k < m; ++k) u[k] = factor(from[k], to[0], true), v[k] = factor(from[0], to[k], false);
  const bool u_zero = std::all_of(u.begin(), u.end(), [](std::int64_t x) { return x == 0; });
  const bool v_zero = std::all_of(v.begin(), v.end(), [](std::int64_t x) { return x == 0; });
  const bool u_same = std::adjacent_find(u.begin(), u.end(), std::not_equal_to<>()) == u.end();
  const bool v_same = std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
  return u_zero || v_zero || (u_same && v_same);
}

Shape relative(const Shape& global_offset, const Box& frame) {
  Shape r(global_offset.size());
  for (std::size_t d = 0; d < r.size(); ++d) r[d] = global_offset[d] - frame.offset[d];
  return r;
}

// A copy of the global box `what` from the block at `src` (covering `src_box`) into the block at
// `dst` (covering `dst_box`), prepared once.
struct Region {
  BoxCopy copy;  // dst/src pointers filled in at run time
  std::size_t dst_offset = 0;  // bytes into the destination buffer
  std::size_t src_offset = 0;  // bytes into the source buffer
  std::size_t bytes = 0;       // bytes copied
  bool empty = true;
};

Region make_region(const Box& dst_box, std::size_t dst_offset, const Box& src_box,
                   std::size_t src_offset, const Box& what, std::size_t es) {
  Region r;
  r.empty = what.empty();
  r.bytes = std::size_t(what.numel()) * es;
  r.dst_offset = dst_offset;
  r.src_offset = src_offset;
  r.copy = {nullptr, dst_box.shape, relative(what.offset, dst_box), nullptr, src_box.shape,
            relative(what.offset, src_box), what.shape, es};
  return r;
}

void run_region(MemorySpace& mem, const Region& r, void* dst, const void* src) {
  if (r.empty) return;
  BoxCopy c = r.copy;
  c.dst = static_cast<std::byte*>(dst) + r.dst_offset;
  c.src = static_cast<const std::byte*>(src) + r.src_offset;
  mem.copy_box(c);
}

bool all_equal(const std::vector<std::size_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

std::vector<std::size_t> displs_of(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> d(counts.size());
  std::size_t t = 0;
  for (std::size_t h = 0; h < counts.size(); ++h) d[h] = t, t += counts[h];
  return d;
}

// One element of the identity of `op` (max: -inf or the lowest value; min: +inf or the largest;
// sum: 0) in dtype `dt`, as bytes. Avg has none (see StepKind::LocalEmbedPartial).
std::vector<std::byte> identity_element(ReduceOp op, DType dt) {
  std::vector<std::byte> b(dtype_size(dt), std::byte{0});
  if (op == ReduceOp::Sum) return b;
  if (op != ReduceOp::Max && op != ReduceOp::Min)
    throw Error("local_embed_partial: P(" + std::string(reduce_op_name(op)) +
                ") has no identity element to fill with; go through R (all_gather, local_partial)");
  const bool mx = op == ReduceOp::Max;
  auto put = [&](auto v) { std::memcpy(b.data(), &v, sizeof v); };
  switch (dt) {
    case DType::F32: put(mx ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity()); break;
    case DType::F64: put(mx ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity()); break;
    case DType::F16: put(std::uint16_t(mx ? 0xFC00u : 0x7C00u)); break;   // IEEE half -inf / +inf
    case DType::BF16: put(std::uint16_t(mx ? 0xFF80u : 0x7F80u)); break;  // bfloat16 -inf / +inf
    case DType::I32: put(mx ? std::numeric_limits<std::int32_t>::lowest() : std::numeric_limits<std::int32_t>::max()); break;
    case DType::I64: put(mx ? std::numeric_limits<std::int64_t>::lowest() : std::numeric_limits<std::int64_t>::max()); break;
    case DType::U8: put(mx ? std::uint8_t(0) : std::numeric_limits<std::uint8_t>::max()); break;
  }
  return b;
}

std::size_t total_of(const std::vector<std::size_t>& counts) {
  std::size_t t = 0;
  for (std::size_t c : counts) t += c;
  return t;
}

}  // namespace

// One step, prepared for this rank.
struct StepExec {
  StepKind kind = StepKind::LocalSlice;
  int mesh_dim = 0;
  DType dtype = DType::F32;
  std::size_t es = 0;
  ReduceOp op = ReduceOp::Sum;
  std::size_t in_bytes = 0, out_bytes = 0;
  bool uniform = false;  // plain collective (counts even within the group)
  std::size_t my_count = 0;
  std::vector<std::size_t> sc, sd, rc, rd;  // counts/displs (all_gather/reduce_scatter use sc/sd)
  std::vector<Region> pack;    // in -> send buffer (reduce_scatter, all_to_all)
  std::vector<Region> unpack;  // recv buffer -> out (all_gather, all_to_all)
  bool direct = false;  // collective writes/reads the in/out blocks directly (no pack/unpack)
  bool zero = false;    // local_partial(sum) off coordinate 0; local_embed_partial(sum)
  Buffer fill;          // local_embed_partial(max|min): the output block full of the identity
  Buffer send;          // packed send buffer
  Buffer recv;          // collective output before unpack
  Buffer result;        // this step's output block (unused for the last step: `out`)
};

struct PlanWorkspace::Impl {
  Plan plan;
  int rank = 0;
  MemorySpace* mem = nullptr;
  DeviceMesh mesh;
  std::vector<StepExec> steps;
};

namespace {

StepExec prepare(const Step& st, const DeviceMesh& mesh, int rank, MemorySpace& mem) {
  StepExec e;
  e.kind = st.kind;
  e.mesh_dim = st.mesh_dim;
  e.dtype = st.before.meta().dtype;
  e.es = dtype_size(e.dtype);
  const std::size_t es = e.es;
  const Box in_box = st.before.local_box(rank);
  const Box out_box = st.after.local_box(rank);
  e.in_bytes = std::size_t(in_box.numel()) * es;
  e.out_bytes = std::size_t(out_box.numel()) * es;
  const std::vector<int> group = mesh.group(rank, {st.mesh_dim});
  const std::size_t m = group.size();
  const std::size_t me = std::size_t(mesh.coord(rank)[std::size_t(st.mesh_dim)]);
  switch (st.kind) {
    case StepKind::AllGather: {
      std::vector<Box> boxes;
      for (int r : group) {
        boxes.push_back(st.before.local_box(r));
        e.sc.push_back(std::size_t(boxes.back().numel()));
      }
      e.sd = displs_of(e.sc);
      e.my_count = e.sc[me];
      e.uniform = all_equal(e.sc);
      // Pieces arrive back to back; when the shard dim is the outermost non-trivial dim they
      // are already in global order, else unpack each into place.
      e.direct = pieces_contiguous(out_box, st.before.placement(st.mesh_dim).dim);
      if (!e.direct) {
        e.recv = Buffer(mem, total_of(e.sc) * es);
        for (std::size_t h = 0; h < m; ++h)
          e.unpack.push_back(make_region(out_box, 0, boxes[h], e.sd[h] * es, boxes[h], es));
      }
      break;
    }
    case StepKind::AllReduce:
      e.op = st.before.placement(st.mesh_dim).op;
      e.my_count = std::size_t(in_box.numel());
      e.direct = true;
      break;
    case StepKind::ReduceScatter: {
      e.op = st.before.placement(st.mesh_dim).op;
      std::vector<Box> targets;
      for (int r : group) {
        targets.push_back(st.after.local_box(r));
        e.sc.push_back(std::size_t(targets.back().numel()));
      }
      e.sd = displs_of(e.sc);
      e.my_count = e.sc[me];
      e.uniform = all_equal(e.sc);
      // Pieces are strided in the input unless the shard dim is the outermost non-trivial one.
      e.direct = pieces_contiguous(in_box, st.after.placement(st.mesh_dim).dim);
      if (!e.direct) {
        e.send = Buffer(mem, total_of(e.sc) * es);
        for (std::size_t h = 0; h < m; ++h)
          e.pack.push_back(make_region(targets[h], e.sd[h] * es, in_box, 0, targets[h], es));
      }
      break;
    }
    case StepKind::AllToAll: {
      std::vector<Box> send_boxes, recv_boxes;
      for (int peer : group) {
        send_boxes.push_back(intersect(in_box, st.after.local_box(peer)));
        recv_boxes.push_back(intersect(st.before.local_box(peer), out_box));
        e.sc.push_back(std::size_t(send_boxes.back().numel()));
        e.rc.push_back(std::size_t(recv_boxes.back().numel()));
      }
      e.sd = displs_of(e.sc);
      e.rd = displs_of(e.rc);
      // Plain all_to_all needs one count for every pair of the group: check the whole matrix,
      // which every member computes identically (pure layout arithmetic).
      std::vector<Box> from_boxes, to_boxes;
      for (int r : group) from_boxes.push_back(st.before.local_box(r)), to_boxes.push_back(st.after.local_box(r));
      e.uniform = all_to_all_uniform(from_boxes, to_boxes);
      e.send = Buffer(mem, total_of(e.sc) * es);
      e.recv = Buffer(mem, total_of(e.rc) * es);
      for (std::size_t h = 0; h < m; ++h) {
        e.pack.push_back(make_region(send_boxes[h], e.sd[h] * es, in_box, 0, send_boxes[h], es));
        e.unpack.push_back(make_region(out_box, 0, recv_boxes[h], e.rd[h] * es, recv_boxes[h], es));
      }
      break;
    }
    case StepKind::LocalSlice:
      e.unpack.push_back(make_region(out_box, 0, in_box, 0, out_box, es));
      break;
    case StepKind::LocalPartial:
      // Sum: the value lives on coordinate 0 only. Avg/max/min: every coordinate keeps it.
      e.zero = st.after.placement(st.mesh_dim).op == ReduceOp::Sum && me != 0;
      break;
    case StepKind::LocalEmbedPartial: {
      // Own shard into the unsplit block; the rest is the reduction's identity, written from a
      // block prepared once here (fill_zero for sum and for identities that are all-zero bytes).
      const ReduceOp op = st.after.placement(st.mesh_dim).op;
      const std::vector<std::byte> id = identity_element(op, e.dtype);
      e.zero = std::all_of(id.begin(), id.end(), [](std::byte b) { return b == std::byte{0}; });
      if (!e.zero && e.out_bytes) {
        std::vector<std::byte> host(e.out_bytes);
        for (std::size_t o = 0; o < e.out_bytes; o += es) std::memcpy(host.data() + o, id.data(), es);
        e.fill = Buffer(mem, e.out_bytes);
        mem.copy_from_host(e.fill.data(), host.data(), host.size());
      }
      e.unpack.push_back(make_region(out_box, 0, in_box, 0, in_box, es));
      break;
    }
  }
  return e;
}

void run_step(MeshCommunicator& mc, StepExec& e, const void* in, void* out) {
  MemorySpace& mem = mc.memory();
  Communicator& comm = mc.dim(e.mesh_dim);
  switch (e.kind) {
    case StepKind::AllGather: {
      void* dst = e.direct ? out : e.recv.data();
      if (e.uniform) comm.all_gather(in, dst, e.my_count, e.dtype);
      else comm.all_gatherv(in, e.my_count, dst, e.sc, e.sd, e.dtype);
      for (const Region& r : e.unpack) run_region(mem, r, out, e.recv.data());
      break;
    }
    case StepKind::AllReduce: comm.all_reduce(in, out, e.my_count, e.dtype, e.op); break;
    case StepKind::ReduceScatter: {
      for (const Region& r : e.pack) run_region(mem, r, e.send.data(), in);
      const void* src = e.direct ? in : e.send.data();
      if (e.uniform) comm.reduce_scatter(src, out, e.my_count, e.dtype, e.op);
      else comm.reduce_scatterv(src, out, e.sc, e.dtype, e.op);
      break;
    }
    case StepKind::AllToAll:
      for (const Region& r : e.pack) run_region(mem, r, e.send.data(), in);
      if (e.uniform) comm.all_to_all(e.send.data(), e.recv.data(), e.sc.empty() ? 0 : e.sc[0], e.dtype);
      else comm.all_to_allv(e.send.data(), e.sc, e.sd, e.recv.data(), e.rc, e.rd, e.dtype);
      for (const Region& r : e.unpack) run_region(mem, r, out, e.recv.data());
      break;
    case StepKind::LocalSlice:
      for (const Region& r : e.unpack) run_region(mem, r, out, in);
      break;
    case StepKind::LocalPartial:
      if (e.zero) mem.fill_zero(out, e.out_bytes);
      else if (e.out_bytes) mem.copy(out, in, e.out_bytes);
      break;
    case StepKind::LocalEmbedPartial:
      if (e.zero) mem.fill_zero(out, e.out_bytes);
      else if (e.out_bytes) mem.copy(out, e.fill.data(), e.out_bytes);
      for (const Region& r : e.unpack) run_region(mem, r, out, in);
      break;
  }
}

}  // namespace

PlanWorkspace::PlanWorkspace(MeshCommunicator& mc, const Plan& plan, bool prefault)
    : impl_(std::make_unique<Impl>()) {
  if (!(plan.from.mesh() == mc.mesh()))
    throw Error("plan is for mesh " + plan.from.mesh().to_string() + " but the communicator's mesh is " +
                mc.mesh().to_string());
  validate_plan(plan);
  Impl& w = *impl_;
  w.plan = plan;
  w.rank = mc.rank();
  w.mem = &mc.memory();
  w.mesh = mc.mesh();
  for (std::size_t k = 0; k < plan.steps.size(); ++k) {
    w.steps.push_back(prepare(plan.steps[k], w.mesh, w.rank, *w.mem));
    if (k + 1 < plan.steps.size()) w.steps.back().result = Buffer(*w.mem, w.steps.back().out_bytes);
  }
  if (prefault) {
    for (StepExec& e : w.steps)
      for (Buffer* b : {&e.send, &e.recv, &e.result})
        if (b->data() != nullptr && b->size() > 0) w.mem->fill_zero(b->data(), b->size());
    w.mem->synchronize();
  }
}

PlanWorkspace::~PlanWorkspace() = default;
PlanWorkspace::PlanWorkspace(PlanWorkspace&&) noexcept = default;
PlanWorkspace& PlanWorkspace::operator=(PlanWorkspace&&) noexcept = default;
const Plan& PlanWorkspace::plan() const { return impl_->plan; }
int PlanWorkspace::rank() const { return impl_->rank; }
std::size_t PlanWorkspace::bytes() const {
  std::size_t t = 0;
  for (const StepExec& e : impl_->steps) t += e.send.size() + e.recv.size() + e.result.size();
  return t;
}

std::size_t PlanWorkspace::copy_bytes(std::size_t step) const {
  const StepExec& e = impl_->steps.at(step);
  if (!step_collective(e.kind)) return 0;  // a local step's copy is the step itself
  std::size_t t = 0;
  for (const auto* rs : {&e.pack, &e.unpack})
    for (const Region& r : *rs) t += r.bytes;
  return t;
}

ShardedTensor make_plan_output(MeshCommunicator& mc, const PlanWorkspace& ws) {
  const TensorSpec& to = ws.plan().to;
  return ShardedTensor(to, mc.rank(), Buffer(mc.memory(), std::size_t(to.local_nbytes(mc.rank()))));
}

void execute_plan(MeshCommunicator& mc, PlanWorkspace& ws, const ShardedTensor& in,
                  ShardedTensor& out) {
  PlanWorkspace::Impl& w = *ws.impl_;
  if (!(w.mesh == mc.mesh()) || w.rank != mc.rank() || w.mem != &mc.memory())
    throw Error("plan workspace was built for rank " + std::to_string(w.rank) + " of mesh " +
                w.mesh.to_string() + " but is used on rank " + std::to_string(mc.rank()) +
                " of mesh " + mc.mesh().to_string() +
                " (or another memory space): build one per MeshCommunicator");
  const std::size_t in_bytes = std::size_t(w.plan.from.local_nbytes(w.rank));
  const std::size_t out_bytes = std::size_t(w.plan.to.local_nbytes(w.rank));
  // Cheap when the input carries the plan's own spelling (the usual case, and the timed one).
  if (!(in.spec().placements() == w.plan.from.placements() && in.spec().meta() == w.plan.from.meta() &&
        in.spec().mesh() == w.plan.from.mesh()) &&
      state_key(in.spec()) != state_key(w.plan.from))
    throw Error("plan starts from " + w.plan.from.serialize() + " but the tensor is " +
                in.spec().serialize());
  if (in.local().size() != in_bytes || out.local().size() != out_bytes)
    throw Error("execute_plan: input/output blocks hold " + std::to_string(in.local().size()) +
                "/" + std::to_string(out.local().size()) + " bytes but the plan needs " +
                std::to_string(in_bytes) + "/" + std::to_string(out_bytes) +
                " on rank " + std::to_string(w.rank) + ": make the output with make_plan_output");
  const void* src = in.local().data();
  if (w.steps.empty()) {
    if (out_bytes) w.mem->copy(out.local().data(), src, out_bytes);
    return;
  }
  for (std::size_t k = 0; k < w.steps.size(); ++k) {
    StepExec& e = w.steps[k];
    void* dst = k + 1 == w.steps.size() ? out.local().data() : e.result.data();
    run_step(mc, e, src, dst);
    src = dst;
  }
}

ShardedTensor execute_plan(MeshCommunicator& mc, const Plan& plan, ShardedTensor tensor) {
  if (!(plan.from.mesh() == mc.mesh()))
    throw Error("plan is for mesh " + plan.from.mesh().to_string() + " but the communicator's mesh is " +
                mc.mesh().to_string());
  if (state_key(tensor.spec()) != state_key(plan.from))
    throw Error("plan starts from " + plan.from.serialize() + " but the tensor is " +
                tensor.spec().serialize());
  if (plan.steps.empty()) {
    validate_plan(plan);
    return ShardedTensor(plan.to, mc.rank(), std::move(tensor.local()));
  }
  PlanWorkspace ws(mc, plan, /*prefault=*/false);
  ShardedTensor out = make_plan_output(mc, ws);
  execute_plan(mc, ws, tensor, out);
  return out;
}

ShardedTensor redistribute(MeshCommunicator& mc, ShardedTensor tensor, const TensorSpec& to) {
  const Plan plan = plan_redistribution(tensor.spec(), to);
  return execute_plan(mc, plan, std::move(tensor));
}

}  // namespace shardcal
