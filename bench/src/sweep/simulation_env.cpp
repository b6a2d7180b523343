#include "sweep/simulation_env.hpp"

#include <cstdlib>

#include "shardcal/error.hpp"

namespace shardbench::sweep {

bool built_for_simulation() {
#ifdef SHARDCAL_SIMULATED_TIME
  return true;
#else
  return false;
#endif
}

nlohmann::json simulation_description(const std::function<const char*(const char*)>& getenv,
                                      bool simulated) {
  if (!simulated) return nullptr;
  const char* text = getenv("SHARDCAL_SIMULATION");
  if (text == nullptr || *text == '\0') return nullptr;
  nlohmann::json desc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!desc.is_object())
    throw shardcal::Error("SHARDCAL_SIMULATION is set but is not a JSON object (it describes the "
                          "simulated platform; scripts/simulate/smpirun.sh sets it): unset it or fix it");
  return desc;
}

nlohmann::json simulation_description() {
  return simulation_description([](const char* name) { return std::getenv(name); },
                                built_for_simulation());
}

}  // namespace shardbench::sweep
