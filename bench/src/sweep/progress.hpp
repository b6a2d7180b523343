#pragma once
// Rank-0 progress on stderr: points done/total, current point, ETA. A redrawn bar when stderr
// is a terminal, one plain line per point otherwise (logs, Slurm output files).
#include <cstdio>
#include <string>

namespace shardbench::sweep {

class Progress {
 public:
  // enabled=false: prints nothing (other ranks, --quiet). `tty` < 0: ask isatty(stderr).
  Progress(bool enabled, std::size_t total, std::size_t already_done, int tty = -1,
           std::FILE* out = stderr);
  void start_point(const std::string& label);
  // `summary` is appended to the plain line (e.g. "p50 12.3 us  busbw 1.2 GB/s").
  void finish_point(const std::string& summary);
  void message(const std::string& text);  // a line that does not disturb the bar
  void done();

  static std::string format_duration(double seconds);  // "1:02:03", "4:05", "12s"

 private:
  void draw();
  bool enabled_;
  bool tty_;
  std::FILE* out_;
  std::size_t total_, done_, ran_ = 0;
  double t_start_;
  std::string current_;
  bool bar_visible_ = false;
};

}  // namespace shardbench::sweep
