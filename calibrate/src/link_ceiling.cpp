#include "shardcal/calibrate/link_ceiling.hpp"

#include <array>
#include <cctype>

namespace shardcal::calib {

namespace {

// Per direction, GB/s. PCIe x16: 3.0 15.75, 4.0 31.5, 5.0 63 (8, 16, 32 GT/s per lane,
// 128b/130b), 6.0 126 (64 GT/s PAM4 FLIT: 128 raw, ~121 after FLIT overhead; 126 stays above).
// NVLink figures are NVIDIA's datasheet totals (bidirectional) halved. Names the table does not
// know (V100S, Quadro RTX 6000, RTX A5000, B300, ...) get no ceiling: no floor, never a wrong one.
constexpr double kPcie3 = 15.75, kPcie4 = 31.5, kPcie5 = 63.0, kPcie6 = 126.0;

struct Entry {
  std::string_view token;  // a whole word of the upper-cased name ("H100", "RTX 2080 TI")
  double nvlink;           // GPU-to-GPU fabric, one direction (0: none)
  double host;             // the host link (PCIe, or NVLink-C2C to the CPU)
  std::string_view what;
};

// First match wins: longer names before the names they contain (GH200 before H200 before H20).
constexpr auto kTable = std::to_array<Entry>({
    // NVIDIA B200 / GB200 datasheets: fifth-generation NVLink 1.8 TB/s per GPU; PCIe 6.0 (GB200:
    // NVLink-C2C 900 GB/s to the Grace CPU).
    {"GB200", 900, 450, "GB200: NVLink 5 900 GB/s + NVLink-C2C 450 GB/s"},
    {"B200", 900, kPcie6, "B200: NVLink 5 900 GB/s + PCIe 6.0 x16 126 GB/s"},
    {"B100", 900, kPcie6, "B100: NVLink 5 900 GB/s + PCIe 6.0 x16 126 GB/s"},
    // GH200 datasheet: NVLink 900 GB/s (fourth generation) and NVLink-C2C 900 GB/s to Grace.
    {"GH200", 450, 450, "GH200: NVLink 4 450 GB/s + NVLink-C2C 450 GB/s"},
    // H100/H200 SXM: NVLink 900 GB/s; H100 PCIe / NVL: NVLink bridge 600 GB/s; H800: 400 GB/s.
    {"H200", 450, kPcie5, "H200: NVLink 4 450 GB/s + PCIe 5.0 x16 63 GB/s"},
    {"H100", 450, kPcie5,
     "H100 (SXM; PCIe/NVL cards less): NVLink 4 450 GB/s + PCIe 5.0 x16 63 GB/s"},
    {"H800", 200, kPcie5, "H800: NVLink 200 GB/s + PCIe 5.0 x16 63 GB/s"},
    {"H20", 450, kPcie5, "H20: NVLink 4 450 GB/s + PCIe 5.0 x16 63 GB/s"},
    // A100 SXM and PCIe (bridge): NVLink 3 600 GB/s; A800 400 GB/s; A30 bridge 200 GB/s; A40 /
    // RTX A6000 bridge 112.5 GB/s; A10 / A10G none.
    {"A100", 300, kPcie4, "A100: NVLink 3 300 GB/s + PCIe 4.0 x16 31.5 GB/s"},
    {"A800", 200, kPcie4, "A800: NVLink 3 200 GB/s + PCIe 4.0 x16 31.5 GB/s"},
    {"A40", 56.25, kPcie4, "A40: NVLink bridge 56.25 GB/s + PCIe 4.0 x16 31.5 GB/s"},
    {"A30", 100, kPcie4, "A30: NVLink bridge 100 GB/s + PCIe 4.0 x16 31.5 GB/s"},
    {"A10", 0, kPcie4, "A10: PCIe 4.0 x16 31.5 GB/s"},
    {"A10G", 0, kPcie4, "A10G: PCIe 4.0 x16 31.5 GB/s"},
    {"RTX A6000", 56.25, kPcie4, "RTX A6000: NVLink bridge 56.25 GB/s + PCIe 4.0 x16 31.5 GB/s"},
    // L40S / L40 / L4 / RTX 4090 / RTX 6000 Ada: no NVLink.
    {"L40S", 0, kPcie4, "L40S: PCIe 4.0 x16 31.5 GB/s"},
    {"L40", 0, kPcie4, "L40: PCIe 4.0 x16 31.5 GB/s"},
    {"L4", 0, kPcie4, "L4: PCIe 4.0 x16 31.5 GB/s"},
    {"RTX 4090", 0, kPcie4, "RTX 4090: PCIe 4.0 x16 31.5 GB/s"},
    {"RTX 6000 ADA", 0, kPcie4, "RTX 6000 Ada: PCIe 4.0 x16 31.5 GB/s"},
    {"RTX 3090", 56.25, kPcie4, "RTX 3090: NVLink bridge 56.25 GB/s + PCIe 4.0 x16 31.5 GB/s"},
    // V100 SXM2/SXM3: NVLink 2 300 GB/s; Turing RTX 2080 Ti bridge 50 GB/s; T4 none.
    {"V100", 150, kPcie3,
     "V100 (SXM; PCIe cards less): NVLink 2 150 GB/s + PCIe 3.0 x16 15.75 GB/s"},
    {"RTX 2080 TI", 50, kPcie3, "RTX 2080 Ti: NVLink bridge 50 GB/s + PCIe 3.0 x16 15.75 GB/s"},
    {"T4", 0, kPcie3, "T4: PCIe 3.0 x16 15.75 GB/s"},
});

// Grace-based parts come in rack-scale NVLink domains (GB200 NVL72, GH200 NVL32): there a group
// across trays ("hosts") talks over NVLink, not its C2C link, so no host-link floor.
bool nvlink_spans_hosts(std::string_view token) { return token == "GB200" || token == "GH200"; }

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::optional<LinkCeiling> gpu_link_ceiling(std::string_view gpu_name) {
  std::string up(gpu_name);
  for (char& c : up) c = char(std::toupper(static_cast<unsigned char>(c)));
  for (const Entry& e : kTable) {
    // A whole-word match: "A10" must not match "A100", "L4" not "L40S".
    for (std::size_t at = up.find(e.token); at != std::string::npos;
         at = up.find(e.token, at + 1)) {
      const std::size_t end = at + e.token.size();
      if ((at == 0 || !word_char(up[at - 1])) && (end == up.size() || !word_char(up[end])))
        return LinkCeiling{e.nvlink + e.host, nvlink_spans_hosts(e.token) ? 0.0 : e.host,
                           std::string(e.what)};
    }
  }
  return std::nullopt;
}

}  // namespace shardcal::calib
