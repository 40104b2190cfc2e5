#pragma once
// Content hashes the hub names files by (OpenSSL libcrypto):
// sha256 of the bytes for LFS files, git's blob sha1 ("blob <len>\0" + bytes) otherwise.
#include <filesystem>
#include <string>

namespace llmport::hub {

/// Lower-case hex sha256 of the file's bytes. Throws UsageError when unreadable.
std::string sha256_file(const std::filesystem::path& file);

/// Lower-case hex git blob sha1 of the file: sha1("blob " + size + '\0' + bytes).
std::string git_blob_sha1_file(const std::filesystem::path& file);

}  // namespace llmport::hub
