#pragma once
#include <string>

namespace shardcal::formats {

// sha256 of a file's bytes as 64 lowercase hex digits (OpenSSL libcrypto), the provenance of
// results and profiles. Throws shardcal::Error on I/O errors.
std::string sha256_file(const std::string& path);

}  // namespace shardcal::formats
