#include "shardcal/formats/atomic_write.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include "shardcal/error.hpp"

namespace shardcal::formats {

namespace fs = std::filesystem;

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const fs::path target(path_);
  std::error_code ec;
  if (fs::is_directory(target, ec))
    throw Error(path_ + ": is a directory; give a file name. Nothing was written");
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  // pid + a random number: two processes (or two writers in one) never share a temporary file.
  std::random_device rd;
  tmp_ = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                 std::to_string(rd())))
             .string();
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    const std::string why = std::strerror(errno);
    throw Error(path_ + ": cannot create a temporary file in " + dir.string() + " (" + why +
                "); check that the directory exists and is writable. Nothing was written");
  }
}

AtomicFile::~AtomicFile() {
  if (!done_) discard();
}

void AtomicFile::discard() noexcept {
  if (out_.is_open()) out_.close();
  std::error_code ec;
  fs::remove(tmp_, ec);
  done_ = true;
}

void AtomicFile::finish() {
  out_.flush();
  const bool ok = bool(out_);
  out_.close();
  if (!ok) {
    discard();
    throw Error(path_ + ": write failed (disk full?); nothing was written");
  }
}

void AtomicFile::rename_into_place() {
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) {
    const std::string why = ec.message();
    discard();
    throw Error(path_ + ": cannot rename the temporary file into place (" + why + ")");
  }
  done_ = true;
}

void AtomicFile::commit() {
  finish();
  rename_into_place();
}

void write_text_atomic(const std::string& path, const std::string& text) {
  write_texts_atomic({{path, text}});
}

void write_texts_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  // Constructed in order, destroyed on any throw: every temporary file goes with them.
  std::vector<std::unique_ptr<AtomicFile>> tmps;
  for (const auto& [path, text] : files) {
    tmps.push_back(std::make_unique<AtomicFile>(path));
    tmps.back()->stream() << text;
    tmps.back()->finish();
  }
  // Every text is on disk: rename, the first file (the one that records success) last.
  for (std::size_t i = tmps.size(); i-- > 0;) tmps[i]->rename_into_place();
}

}  // namespace shardcal::formats
