// Writes the fuzzer's seed corpus: the valid base GGUF and every malformed case of
// tests/testutil/gguf_corpus, one file each, into the folder given as argv[1].
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "testutil/gguf_corpus.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  write("valid_base", testutil::gguf_valid_base());
  int n = 1;
  for (const auto& c : testutil::gguf_malformed_corpus()) {
    write(c.name, c.bytes);
    ++n;
  }
  std::printf("%d seeds in %s\n", n, dir.c_str());
  return 0;
}
