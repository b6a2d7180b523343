#pragma once
#include <string>
#include <string_view>

namespace shardcal::formats {

// sha256 of a file's bytes as 64 lowercase hex digits (OpenSSL libcrypto), the provenance of
// results and profiles. Throws shardcal::Error on I/O errors.
std::string sha256_file(const std::string& path);
// sha256 of bytes already in memory (e.g. a file read once to parse it): the same digest
// sha256_file gives for a file holding them.
std::string sha256_bytes(std::string_view bytes);

}  // namespace shardcal::formats
