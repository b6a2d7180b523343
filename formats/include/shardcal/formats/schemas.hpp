#pragma once
// Schema names and format versions of every file shardcal writes (docs/RESULTS_FORMAT.md,
// docs/PROFILE_FORMAT.md, docs/GATE.md). Writers stamp them, readers refuse anything else; the
// Python readers take the same values from formats/formats.json (a test keeps the two equal).
#include <string>

namespace shardcal::formats {

// Sweep results (JSON Lines). 2: transition keys use canonical placements (the user's text is
// kept in from_given/to_given), every point carries its timing protocol (also part of its key),
// the context records git_dirty. Version 1 files record wrong transition step bytes.
inline constexpr const char* kResultsSchema = "shardcal.sweep.results";
inline constexpr int kResultsVersion = 2;

// Calibrated cost-model profile (JSON).
inline constexpr const char* kProfileSchema = "shardcal.profile";
inline constexpr int kProfileVersion = 1;

// `shardbench gate` report (JSON).
inline constexpr const char* kGateSchema = "shardcal.gate";
inline constexpr int kGateVersion = 1;

// `shardbench validate` output (JSON Lines): one record per transition, then a summary.
inline constexpr const char* kValidateSchema = "shardcal.validate";
inline constexpr const char* kValidateSummarySchema = "shardcal.validate.summary";
inline constexpr int kValidateVersion = 1;

// "NAME vN": how help texts name a format, from the constants above.
inline std::string schema_label(const char* schema, int version) {
  return std::string(schema) + " v" + std::to_string(version);
}

}  // namespace shardcal::formats
