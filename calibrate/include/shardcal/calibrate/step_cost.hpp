#pragma once
// Prices of plan steps from a calibrated profile: the bridge between the cost model
// (profile.hpp) and the cost-based planner (shardcal/planner.hpp). Also used by the fitter's
// transition composition (src/copy_cost.cpp), so a transition is priced the same way everywhere.
// docs/PLANNER.md "Costs".
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "shardcal/calibrate/profile.hpp"
#include "shardcal/mesh.hpp"
#include "shardcal/plan.hpp"
#include "shardcal/planner.hpp"

namespace shardcal::calib {

// Local steps (local_slice, local_partial, local_embed_partial) have no model in a profile;
// they are priced as a memory copy of what they write (the largest output block of any rank):
// bytes / the copy bandwidth of the profile's memory space, plus kLocalStepUs (so that, of two
// plans with the same collectives, the one with fewer local steps is cheaper).
// docs/PLANNER.md "Local steps". Stated constants, not measured per machine:
inline constexpr double kLocalCopyGBpsHost = 10.0;    // 1e9 B/s: one core's memcpy, DDR4/5
inline constexpr double kLocalCopyGBpsCuda = 1000.0;  // 1e9 B/s: device-to-device, HBM
inline constexpr double kLocalStepUs = 0.01;
// The copy bandwidth used for a profile: the one calibrate fitted (Profile::local_copy; +inf when
// copies are free there), else kLocalCopyGBpsCuda when its memory is "cuda", else host.
double local_copy_GBps(const Profile& p);
// "12.5 GB/s (fitted)", "no cost (fitted)", "10 GB/s (host memory copy)": for explanations.
std::string copy_bandwidth_text(const Profile& p);
// Whether collective steps also pay their pack/unpack (StepTraffic::max_copy_bytes) at
// local_copy_GBps: true for measured profiles, whose models were fitted on contiguous buffers
// (the sweep's collective points), so the copies around a collective on a non-leading shard dim
// (and every all_to_all's) are not in them. False for built-in analytic profiles (backend
// "model", e.g. dtensor-default), which reproduce another planner's formula exactly.
bool prices_copies(const Profile& p);

struct StepPrice {
  double time_us = 0;
  Prediction prediction;  // model, segment, extrapolated, note (model null for local steps)
  LinkClass link;
};

// Link class of a mesh dim: ranks laid out row-major over the mesh (last dim fastest), hosts of
// `ranks_per_host` consecutive ranks (the last host may hold fewer). group_size = the extent;
// hosts = the most hosts any group along the dim spans, ranks_per_host = group size / hosts; a
// group spread unevenly over its hosts (3 ranks on 2 hosts) is priced as one rank per host
// (hosts = group size: a ring over it is paced by inter-host links); concurrent_groups = groups x
// hosts spanned / number of hosts, rounded, >= 1 (the results reader's rule). Throws Error for
// ranks_per_host < 1.
LinkClass mesh_dim_link_class(const DeviceMesh& mesh, int mesh_dim, int ranks_per_host);

// The link class of a group of `group_size` ranks spanning `hosts_spanned` hosts with
// `concurrent_groups` groups at once per host (as a sweep records a step). Profiles describe
// groups with the same number of ranks on each host; a group spread unevenly is priced as one
// rank per host (hosts = group size). The fitter's transition composition and price_step share it.
LinkClass group_link_class(int group_size, int hosts_spanned, int concurrent_groups);

// The price of one collective step from what it moves, shared by price_step and the fitter's
// transition composition (src/copy_cost.cpp): predict() for collective c on link class lc with the
// heaviest group's counts (elements per group position, all_to_all the m x m send matrix; S_eff
// by the chosen model's effective-size rule) and S = bytes in the table's convention.
Prediction price_collective(const Profile& p, Collective c, const LinkClass& lc, double bytes,
                            std::span<const std::int64_t> counts, int elem_size,
                            std::optional<DType> dtype);

// Price of one step. Collective steps: predict() on the step's collective and link class with
// the heaviest group's counts (uneven counts via the model's effective-size rule) and the
// tensor's dtype, plus the pack/unpack copy where prices_copies(p). Local steps: the
// memory-copy rule above. Throws Error (from predict) when the
// profile has no model for the step's collective.
StepPrice price_step(const Profile& p, const Step& s, const StepTraffic& t, int ranks_per_host);

// A StepCostFn for plan_cheapest: copies the profile. A step whose collective has no model is
// priced +inf (never taken). Prices from the traffic alone (StepCostFn::from_traffic), with
// price_step's arithmetic (equal to the bit) but without its notes: per (mesh, mesh dim, dtype,
// collective) the link class and the model predict() chooses are looked up once per cost
// function, so per step, after the first use of that (mesh dim, collective) in a search, a price
// takes no lock, builds no string and allocates nothing (binding, once per search, locks the
// shared memo and allocates the search's slots). The memo lives as long as the returned function:
// keep one for many searches (LoadedProfile::step_cost does) rather than one per search.
StepCostFn profile_step_cost(const Profile& p, int ranks_per_host);
// The same over a shared profile, without the copy.
StepCostFn profile_step_cost(std::shared_ptr<const Profile> p, int ranks_per_host);

}  // namespace shardcal::calib
