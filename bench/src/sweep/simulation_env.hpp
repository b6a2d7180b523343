#pragma once
// The description of the simulated platform a run is on (docs/SIMULATION.md, "Results say they
// were simulated"). scripts/simulate/smpirun.sh sets SHARDCAL_SIMULATION to a JSON object
// (platform file and its sha256, SMPI settings, rank count); sweep writes it into its context
// record and validate into its summary, so simulated numbers are never mistaken for measured ones
// and `sweep --resume` never mixes platforms. Only the SMPI build reads it: a native binary's
// results are real whatever the environment says, so there a leftover variable is ignored.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace shardbench::sweep {

// Whether this binary was built for SimGrid SMPI (the seam header defines SHARDCAL_SIMULATED_TIME).
bool built_for_simulation();

// The "simulation" object, or null when the run is not simulated (native build, or the variable
// unset/empty). Throws shardcal::Error when an SMPI build finds text that is not a JSON object.
// `getenv` is injectable for tests; `simulated` defaults to built_for_simulation().
nlohmann::json simulation_description(const std::function<const char*(const char*)>& getenv,
                                      bool simulated);
nlohmann::json simulation_description();

}  // namespace shardbench::sweep
