#pragma once
// The most bytes per second one GPU can move through all of its links in one direction, from
// its name (docs/CALIBRATION.md "Link ceilings"). With the collective table's link_floor_factor
// it bounds a collective's time from below: t(S) >= S x link_floor_factor(n) / ceiling. Past
// the measured sizes that bound is what the data cannot give (an extrapolation carried on from
// a flat top would otherwise run faster than the links).
#include <optional>
#include <string>
#include <string_view>

namespace shardcal::calib {

struct LinkCeiling {
  double GBps = 0;     // 1e9 bytes/s, one direction, every link of the GPU together
  // The host link alone (PCIe x16): every byte a GPU sends to or receives from another host
  // crosses it (its NIC sits behind it; NCCL's PXN relays through ranks of the same
  // communicator only). 0 = not a bound: GPUs whose NVLink domain can span hosts (GB200, GH200).
  double host_GBps = 0;
  std::string source;  // which GPU and links: "H100 SXM: NVLink 4 450 GB/s + PCIe 5.0 x16 63 GB/s"
};

// The ceiling of a GPU named as nvidia-smi / nccl-tests / torch print it ("NVIDIA H100 80GB
// HBM3", "Tesla V100-SXM2-32GB", "NVIDIA GeForce RTX 2080 Ti"); none for a name the table
// does not know. Where a model comes in variants (SXM, PCIe with an NVLink bridge), the fastest
// variant's: a ceiling must never be below what the GPU can do.
std::optional<LinkCeiling> gpu_link_ceiling(std::string_view gpu_name);

// The floor a ceiling puts on a collective's time (us) at S_eff bytes: bytes / (GB/s) = ns.
inline double link_floor_us(double link_floor_factor, double s_eff, double ceiling_GBps) {
  return ceiling_GBps > 0 ? s_eff * link_floor_factor / ceiling_GBps * 1e-3 : 0.0;
}

}  // namespace shardcal::calib
