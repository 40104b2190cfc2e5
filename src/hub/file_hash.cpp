#include "hub/file_hash.hpp"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "llmport/error.hpp"

namespace llmport::hub {
namespace fs = std::filesystem;

namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string digest_file(const fs::path& file, const EVP_MD* md, const std::string& prefix) {
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) throw UsageError("OpenSSL digest init failed");
  EVP_DigestUpdate(ctx.get(), prefix.data(), prefix.size());
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError("cannot read " + file.string() + " to hash it");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw UsageError("read error while hashing " + file.string());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &n);
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) {
    s += hex[out[i] >> 4];
    s += hex[out[i] & 15];
  }
  return s;
}

}  // namespace

std::string sha256_file(const fs::path& file) { return digest_file(file, EVP_sha256(), ""); }

std::string git_blob_sha1_file(const fs::path& file) {
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) throw UsageError("cannot read " + file.string() + " to hash it: " + ec.message());
  std::string prefix = "blob " + std::to_string(size);
  prefix.push_back('\0');
  return digest_file(file, EVP_sha1(), prefix);
}

}  // namespace llmport::hub
