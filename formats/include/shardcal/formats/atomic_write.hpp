#pragma once
// Output files appear whole or not at all: text goes to a temporary file in the target's
// directory (same file system, so the rename is atomic) and is renamed into place at the end.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace shardcal::formats {

// A file written incrementally and published by commit(); destroyed uncommitted (an error, a
// signal unwinding the stack), it removes its temporary file and leaves the target untouched.
class AtomicFile {
 public:
  // Creates the temporary file. Throws shardcal::Error naming `path` when the target is a
  // directory or the temporary file cannot be created ("Nothing was written").
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  std::ostream& stream() { return out_; }
  // Flushes and renames into place. Throws shardcal::Error (and removes the temporary file) when
  // the write or the rename failed.
  void commit();
  // Writes and flushes, without renaming (the caller renames several files in order).
  void finish();
  void rename_into_place();
  const std::string& path() const { return path_; }

 private:
  void discard() noexcept;
  std::string path_;
  std::string tmp_;
  std::ofstream out_;
  bool done_ = false;
};

// Writes text to path through a temporary file and a rename: a failed write leaves no (partial)
// file. Throws shardcal::Error naming the path.
void write_text_atomic(const std::string& path, const std::string& text);
// Several files written together: every text goes to a temporary file first (an existing
// directory as a target, or a failed write, removes them all and throws before any target is
// touched), then each is renamed into place, the first path last. A caller puts the file that
// records success first.
void write_texts_atomic(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace shardcal::formats
