#pragma once
// Plans as checked data. A plan is a list of steps, each changing the placement of one mesh dim
// with one collective (or a local operation). Everything here is pure (no communication, no
// executor): any rank, and any tool (the sweep, the cost model, a search-based planner), can
// enumerate the legal steps from a state, check a plan, and describe what a step moves.
//
//   legal_steps(spec)     every single-mesh-dim step the executor can run from `spec`
//   state_key(spec)       canonical text of the data layout (equal keys = the same blocks)
//   validate_plan(plan)   steps chain, each is legal, the last reaches the target; throws Error
//   describe_step(step)   collective, groups, per-group counts, bytes (see StepTraffic)
//   plan_redistribution   the rule-based (DTensor-style) planner; its plans pass validate_plan
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shardcal/collectives.hpp"
#include "shardcal/layout.hpp"

namespace shardcal {

enum class StepKind : unsigned char {
  AllGather,      // S -> R           (all_gather / all_gatherv on the mesh dim)
  AllReduce,      // P -> R           (all_reduce)
  ReduceScatter,  // P -> S           (reduce_scatter / reduce_scatterv)
  AllToAll,       // S(a) -> S(b), or S(d) -> S(d) with new sizes (all_to_all / all_to_allv)
  LocalSlice,     // R -> S           (no communication)
  LocalPartial,   // R -> P           (no communication: zero off coordinate 0 for sum)
  // S -> P(sum|max|min) (no communication): each rank keeps its shard in a buffer of the
  // unsplit extent and fills the rest with the reduction's identity (0 for sum; -inf / the
  // lowest value for max; +inf / the largest value for min), so the group's reduction is the
  // tensor exactly. Not for P(avg): the mean of one value and m-1 fillers is not the value
  // (scaling by m is inexact in floating point and for integers). The cost-based planner uses
  // it; plan_redistribution (the DTensor-style greedy) still goes S -> R -> P.
  LocalEmbedPartial,
};
std::string step_kind_name(StepKind k);  // "all_gather", "local_slice", ...
// The collective of the table (shardcal/collectives.hpp) a step runs; nullopt for local steps.
std::optional<Collective> step_collective(StepKind k);
// The single step kind that changes placement `a` into `b` on one mesh dim (both canonical and
// different); nullopt when none does (S -> P(avg), P -> P(other op): through R).
std::optional<StepKind> step_kind_for(const Placement& a, const Placement& b);

struct Step {
  int mesh_dim = 0;
  StepKind kind = StepKind::LocalSlice;
  TensorSpec before;
  TensorSpec after;
  // "mesh dim 0: S(0)[3,7] -> R  all_gather  groups 4 x 2 ranks  280 B (whole output)"
  std::string to_string() const;
};

struct Plan {
  TensorSpec from;
  TensorSpec to;
  std::vector<Step> steps;
  std::string to_string() const;
};

// ---- States -----------------------------------------------------------------------------------

// Canonical placements of a spec's layout: a mesh dim of size 1 is R (every placement of a
// size-1 dim holds the same data: the whole piece, the reduced value), and explicit shard sizes
// that equal torch.chunk sizes for every piece they split are written as chunk (S(0) and
// S(0)[3,3,3,1] of extent 10 are the same state).
std::vector<Placement> canonical_placements(const TensorSpec& spec);
// "mesh=4;shape=10;dtype=f32;placements=S(0)": the canonical spec's serialize(); two specs have
// equal keys iff every rank holds the same block in the same form.
std::string state_key(const TensorSpec& spec);

// ---- Steps ------------------------------------------------------------------------------------

// Why the executor cannot run `step` (empty string when it can). Checks: the mesh dim exists and
// has size > 1; `after` differs from `before` on that mesh dim only (by state); the kind is the
// one for that placement change (S->R all_gather, P->R all_reduce, P->S reduce_scatter,
// S->S all_to_all, R->S local_slice, R->P local_partial, S->P(sum|max|min)
// local_embed_partial); no inner mesh dim (a later one)
// shards a tensor dim the step splits or joins (the group would hold interleaved pieces: gather
// the inner dim first).
std::string step_problem(const Step& step);

// Every step the executor can run from `spec`: per mesh dim of size > 1, per target placement
// in {R, P(sum|avg|max|min), S(d) chunk for each tensor dim d} that one legal step reaches.
// Targets with explicit sizes (all_to_all / local_slice / reduce_scatter onto uneven shards) are
// legal too (step_problem accepts them) but are not enumerated: there are infinitely many.
std::vector<Step> legal_steps(const TensorSpec& spec);
// The same steps without those onto P(op) for ops where partial_ops[op] is false (indexed by
// ReduceOp; empty = every op): the planner never builds targets it would drop.
std::vector<Step> legal_steps(const TensorSpec& spec, const std::vector<bool>& partial_ops);

// Throws Error naming the step and what is wrong (plans from other meshes or tensors, a broken
// chain, an illegal step, a step on a mesh dim of size 1, a last state that is not the target).
// Pure and deterministic: every rank reaches the same verdict with no communication.
void validate_plan(const Plan& plan);

// ---- What a step moves ------------------------------------------------------------------------

// What one step moves. Groups are the sets of ranks that differ only in the step's mesh dim;
// all groups run at once. Counts are in elements; bytes = elements * elem_size.
struct StepTraffic {
  StepKind kind = StepKind::LocalSlice;
  std::optional<Collective> collective;  // nullopt: local step, nothing moves
  int mesh_dim = 0;
  int group_size = 1;
  int groups = 1;  // groups running at once (mesh size / group size)
  // Heaviest group (largest `bytes`; the first such by group color): elements per group
  // position. all_gather: each position's contribution; reduce_scatter: each position's
  // result; all_reduce: the buffer length, per position. all_to_all: the m x m send matrix,
  // row-major, counts[src * m + dst] (diagonal = the part a rank keeps).
  std::vector<std::int64_t> counts;
  int heaviest_group = 0;        // its group color (DeviceMesh::group_color)
  bool groups_identical = true;  // every group has the same counts
  // The executor picks the plain call or the v-form per group (core/src/execute.cpp): the plain
  // one where that group's counts are even. `uniform`: every group makes the plain call;
  // `plain_groups`: how many do (groups - plain_groups make the v-form call). Groups can differ:
  // shape [5] on 2x2, S(0),S(0) -> S(0),R gathers counts 2,1 in one group and 1,1 in the other.
  bool uniform = true;
  int plain_groups = 0;  // 0 for local steps
  bool heaviest_uniform = true;  // the heaviest group (the one `counts` shows) makes the plain call
  std::size_t elem_size = 0;
  // Bytes of the heaviest group in the collective table's convention (collective_info().
  // bytes_convention): all_gather the whole output, reduce_scatter one rank's whole input,
  // all_reduce one rank's buffer, all_to_all the largest send buffer of one rank (own part
  // included). 0 for local steps.
  std::int64_t bytes = 0;
  // Largest bytes any rank sends to / receives from other ranks over the whole step, counted as
  // if every pair exchanged directly (no relaying): all_gather sends its block to each of the
  // m-1 others; reduce_scatter sends each other position its piece; all_reduce sends its
  // buffer to each of the m-1 others; all_to_all sends its off-diagonal row. Own parts are
  // never counted; 0 for local steps.
  std::int64_t max_send_bytes = 0;
  std::int64_t max_recv_bytes = 0;
  // Largest bytes any rank copies around the collective: packs into a send buffer plus unpacks
  // from a receive buffer (step_copy_bytes). Host memory traffic on top of the communication;
  // 0 for local steps (their copy is the step itself).
  std::int64_t max_copy_bytes = 0;
  // Largest block any rank holds after the step, in bytes (local steps too: what a local step
  // writes).
  std::int64_t max_out_bytes = 0;
};
// Computed per distinct group shape, not per rank: the time does not grow with the mesh size
// (docs/PLANNER.md "Step descriptions at scale").
StepTraffic describe_step(const Step& step);
// describe_step without the step_problem check, for steps already known legal (the planner's
// candidates come from legal_steps); an illegal step gives meaningless numbers.
StepTraffic describe_legal_step(const Step& step);
// describe_legal_step from a step's parts, for a search that keeps compact states instead of
// specs: the placements before the step (one per mesh dim, valid for mesh and meta), the step's
// mesh dim and kind, and its placement after on that dim. Overwrites every field of `out`,
// reusing the capacity of out.counts: no allocation once the buffers have grown.
void describe_legal_step_into(const DeviceMesh& mesh, const TensorMeta& meta,
                              std::span<const Placement* const> before, int mesh_dim,
                              StepKind kind, const Placement& after, StepTraffic& out);
// The same for several steps out of one set of placements on one mesh dim (a search pricing a
// state's candidates): prepare() computes what they share (the other mesh dims' extents), then
// describe() each step by its kind and placement after. `mesh`, `meta` and the placements must
// outlive the describes that follow a prepare(). describe() before any prepare() throws Error.
class StepDescriber {
 public:
  StepDescriber();
  ~StepDescriber();
  StepDescriber(const StepDescriber&) = delete;
  StepDescriber& operator=(const StepDescriber&) = delete;
  void prepare(const DeviceMesh& mesh, const TensorMeta& meta,
               std::span<const Placement* const> before, int mesh_dim);
  void describe(StepKind kind, const Placement& after, StepTraffic& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The executor's pack/unpack rule (core/src/execute.cpp uses these, the planner's prices use
// them through StepTraffic::max_copy_bytes). A collective reads or writes a block in place when
// the pieces it splits the block into along tensor dim `dim` are contiguous and in order, i.e.
// every dim before `dim` has extent 1 in the block; otherwise the pieces are packed into (or
// unpacked from) a buffer.
bool pieces_contiguous(const Box& block, int dim);
// Bytes rank `rank` copies around the step's collective: all_gather unpacks its output unless
// pieces_contiguous(out block, shard dim); reduce_scatter packs its input unless
// pieces_contiguous(in block, shard dim); all_to_all always packs its input and unpacks its
// output; all_reduce and local steps copy nothing here.
std::int64_t step_copy_bytes(const Step& step, int rank);

// Per-group-position counts of one group of a step, as the executor passes them to the
// collective (same layout as StepTraffic::counts). `rank` is any member of the group.
std::vector<std::int64_t> step_group_counts(const Step& step, int rank);

// ---- Planner ----------------------------------------------------------------------------------

// Throws Error when the specs disagree on mesh or tensor meta. Every target spec is reachable.
// Emits no step on a mesh dim of size 1 and none where source and target are the same state; the
// plan passes validate_plan.
Plan plan_redistribution(const TensorSpec& from, const TensorSpec& to);

}  // namespace shardcal
