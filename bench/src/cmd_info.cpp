// `shardbench info`: backends compiled in and library versions (topology comes with the backends).
#include <iostream>

#include "commands.hpp"

namespace shardbench {

Runner add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show compiled-in backends and library versions");
  (void)cmd;
  return []() -> int {
    std::cout << "backends:";
    for (const auto& b : shardcal::compiled_backends()) std::cout << " " << b;
    std::cout << "\n";
    for (const auto& [name, version] : shardcal::library_versions())
      std::cout << name << ": " << version << "\n";
    return 0;
  };
}

}  // namespace shardbench
