#include "shardcal/formats/sha256.hpp"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "shardcal/error.hpp"

namespace shardcal::formats {

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for sha256");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw Error("sha256: OpenSSL EVP_DigestInit_ex failed");
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    const std::streamsize got = in.gcount();
    if (got > 0 && EVP_DigestUpdate(ctx.get(), buf.data(), std::size_t(got)) != 1)
      throw Error("sha256: OpenSSL EVP_DigestUpdate failed");
  }
  if (in.bad()) throw Error(path + ": read error while hashing");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1)
    throw Error("sha256: OpenSSL EVP_DigestFinal_ex failed");
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += hex[md[i] >> 4];
    s += hex[md[i] & 15];
  }
  return s;
}

}  // namespace shardcal::formats
