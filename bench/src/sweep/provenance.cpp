#include "sweep/provenance.hpp"

#include <fstream>
#include <iterator>

#include "shardcal_git_revision.hpp"  // generated at build time (cmake/git_revision.cmake)
#ifndef SHARDCAL_VERSION
#define SHARDCAL_VERSION "unknown"
#endif

namespace shardbench::sweep {

std::string process_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out, arg;
  auto flush = [&] {
    const bool plain = !arg.empty() && arg.find_first_of(" \t\"'\\$`;&|<>()*?[]{}") == std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
    } else {  // single quotes, with ' written as '\''
      out += '\'';
      for (char ch : arg) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
      out += '\'';
    }
    arg.clear();
  };
  for (char ch : raw) {
    if (ch == '\0') flush();
    else arg += ch;
  }
  if (!arg.empty()) flush();
  return out;
}

std::string git_revision() { return SHARDCAL_GIT_REVISION; }
int git_dirty() { return SHARDCAL_GIT_DIRTY; }
std::string shardcal_version() { return SHARDCAL_VERSION; }

}  // namespace shardbench::sweep
