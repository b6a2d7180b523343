#pragma once
// What a results file's context record says about the program that wrote it (its command line,
// build revision and version).
#include <string>

namespace shardbench::sweep {

std::string process_command_line();  // /proc/self/cmdline, shell-quoted where needed
// `git describe --always --abbrev=12` of the source tree at BUILD time (every build re-reads it;
// "unknown" outside git), and whether tracked files differed from that commit: 1 dirty, 0 clean,
// -1 unknown.
std::string git_revision();
int git_dirty();
std::string shardcal_version();

}  // namespace shardbench::sweep
