#include "shardcal/formats/atomic_write.hpp"

#include <fcntl.h>
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

std::ostream& AtomicFile::stream() {
  if (finished_)
    throw Error(path_ + ": written after it was finished or committed (a bug in the caller)");
  return out_;
}

void AtomicFile::discard() noexcept {
  if (out_.is_open()) out_.close();
  std::error_code ec;
  fs::remove(tmp_, ec);
  done_ = finished_ = true;
}

namespace {

// fsync(2) of a path opened read-only (Linux allows it for files and directories); the errno of
// the failure, 0 on success. EINVAL: the file system cannot sync this kind of file, nothing to do.
int sync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) return errno;
  int err = ::fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

}  // namespace

void AtomicFile::finish() {
  if (finished_)
    throw Error(path_ + ": finished or committed twice (a bug in the caller)");
  out_.flush();
  bool ok = bool(out_);
  // Some errors (a full disk, a network file system) surface only when the file is closed.
  out_.close();
  ok = ok && !out_.fail();
  int err = ok ? 0 : errno;
  // On disk before the rename publishes it: a crash never leaves a renamed but empty file.
  if (ok) err = sync_path(tmp_, 0);
  finished_ = true;
  if (!ok || err != 0) {
    const std::string why = err != 0 ? std::strerror(err) : "unknown error";
    discard();
    throw Error(path_ + ": write failed (" + why + "; disk full?); nothing was written");
  }
}

void AtomicFile::rename_into_place() {
  if (done_) throw Error(path_ + ": committed twice (a bug in the caller)");
  if (!finished_) finish();
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) {
    const std::string why = ec.message();
    discard();
    throw Error(path_ + ": cannot rename the temporary file into place (" + why + ")");
  }
  done_ = true;
  // The rename itself lives in the directory: sync it so the new name survives a crash.
  fs::path dir = fs::path(path_).parent_path();
  if (dir.empty()) dir = ".";
  if (const int err = sync_path(dir.string(), O_DIRECTORY); err != 0)
    throw Error(path_ + ": written, but syncing its directory failed (" + std::strerror(err) +
                "); the file may not survive a crash");
}

void AtomicFile::commit() {
  if (done_) throw Error(path_ + ": committed twice (a bug in the caller)");
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
