#include "sweep/progress.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>

namespace shardbench::sweep {

namespace {
double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Progress::Progress(bool enabled, std::size_t total, std::size_t already_done, int tty, std::FILE* out)
    : enabled_(enabled),
      tty_(tty < 0 ? ::isatty(::fileno(out)) != 0 : tty != 0),
      out_(out),
      total_(total),
      done_(already_done),
      t_start_(wall_now()) {
  if (enabled_ && already_done > 0)
    message("resuming: " + std::to_string(already_done) + " of " + std::to_string(total) +
            " points already in the file");
}

std::string Progress::format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

void Progress::start_point(const std::string& label) {
  current_ = label;
  if (enabled_ && tty_) draw();
}

void Progress::draw() {
  // ETA from the mean time of the points run in this process (resumed ones cost nothing).
  const double el = wall_now() - t_start_;
  const std::size_t left = total_ - done_;
  const std::string eta = ran_ == 0 ? "?" : format_duration(el / double(ran_) * double(left));
  constexpr int kWidth = 24;
  const int filled = total_ == 0 ? kWidth : int(double(done_) / double(total_) * kWidth);
  std::string bar(std::size_t(filled), '#');
  bar.resize(kWidth, '.');
  std::string label = current_;
  if (label.size() > 60) label = label.substr(0, 57) + "...";
  std::fprintf(out_, "\r\033[K[%s] %zu/%zu ETA %s  %s", bar.c_str(), done_, total_, eta.c_str(),
               label.c_str());
  std::fflush(out_);
  bar_visible_ = true;
}

void Progress::finish_point(const std::string& summary) {
  ++done_;
  ++ran_;
  if (!enabled_) return;
  if (tty_) {
    draw();
    return;
  }
  const double el = wall_now() - t_start_;
  const std::string eta = format_duration(el / double(ran_) * double(total_ - done_));
  std::fprintf(out_, "[%zu/%zu] %s  %s  (ETA %s)\n", done_, total_, current_.c_str(), summary.c_str(),
               eta.c_str());
  std::fflush(out_);
}

void Progress::message(const std::string& text) {
  if (!enabled_) return;
  if (bar_visible_) std::fputs("\r\033[K", out_);
  std::fprintf(out_, "%s\n", text.c_str());
  bar_visible_ = false;
  if (tty_ && !current_.empty()) draw();
  std::fflush(out_);
}

void Progress::done() {
  if (!enabled_) return;
  if (bar_visible_) std::fputs("\n", out_);
  bar_visible_ = false;
  std::fprintf(out_, "sweep: %zu/%zu points in %s\n", done_, total_,
               format_duration(wall_now() - t_start_).c_str());
  std::fflush(out_);
}

}  // namespace shardbench::sweep
