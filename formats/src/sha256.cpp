#include "shardcal/formats/sha256.hpp"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "shardcal/error.hpp"

namespace shardcal::formats {

namespace {

using Ctx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

Ctx begin() {
  Ctx ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw Error("sha256: OpenSSL EVP_DigestInit_ex failed");
  return ctx;
}

void update(EVP_MD_CTX* ctx, const char* data, std::size_t n) {
  if (n > 0 && EVP_DigestUpdate(ctx, data, n) != 1)
    throw Error("sha256: OpenSSL EVP_DigestUpdate failed");
}

std::string finish(EVP_MD_CTX* ctx) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx, md, &len) != 1)
    throw Error("sha256: OpenSSL EVP_DigestFinal_ex failed");
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += hex[md[i] >> 4];
    s += hex[md[i] & 15];
  }
  return s;
}

}  // namespace

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for sha256");
  const Ctx ctx = begin();
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    update(ctx.get(), buf.data(), std::size_t(in.gcount()));
  }
  if (in.bad()) throw Error(path + ": read error while hashing");
  return finish(ctx.get());
}

std::string sha256_bytes(std::string_view bytes) {
  const Ctx ctx = begin();
  update(ctx.get(), bytes.data(), bytes.size());
  return finish(ctx.get());
}

}  // namespace shardcal::formats
