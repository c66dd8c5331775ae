#include "testutil/fixtures.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "edgellm/synth.h"

namespace fs = std::filesystem;

namespace testutil {

std::string fixture_dir() {
  const char* env = std::getenv("EDGELLM_FIXTURE_DIR");
  std::string dir = env && *env ? env : EDGELLM_TEST_FIXTURE_DIR;
  fs::create_directories(dir);
  return dir;
}

std::string vocab_path() { return EDGELLM_TEST_VOCAB; }

std::string synth_model(const std::string& preset, const std::string& type) {
  const std::string path = fixture_dir() + "/" + preset + "-" + type + ".gguf";
  if (fs::exists(path)) return path;
  edgellm::SynthOptions o;
  o.preset = preset;
  o.type = type;
  o.output = path;
  o.vocab_path = vocab_path();
  edgellm::Status st = edgellm::synth_model(o);
  if (!st.ok()) {
    ADD_FAILURE() << "synth " << preset << " " << type << ": " << st.ToString();
    return {};
  }
  return path;
}

std::string scratch_dir(const std::string& name) {
  const std::string dir = fixture_dir() + "/scratch-" + name + "-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace testutil
