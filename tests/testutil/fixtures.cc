#include "testutil/fixtures.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "edgellm/model.h"
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

std::string synth_mmproj_path(const std::string& preset) {
  return fixture_dir() + "/" + preset + "-mmproj-F16.gguf";
}

std::string synth_multimodal(const std::string& preset, const std::string& type) {
  // synth_model commits the projector first and the text model last: the text model's
  // presence means both are complete.
  const std::string path = fixture_dir() + "/" + preset + "-" + type + ".gguf";
  if (fs::exists(path) && fs::exists(synth_mmproj_path(preset))) return path;
  edgellm::SynthOptions o;
  o.preset = preset;
  o.type = type;
  o.output = path;
  o.mmproj_output = synth_mmproj_path(preset);
  o.vocab_path = vocab_path();
  edgellm::Status st = edgellm::synth_model(o);
  if (!st.ok()) {
    ADD_FAILURE() << "synth " << preset << " " << type << " with its projector: " << st.ToString();
    return {};
  }
  return path;
}

edgellm::Generation generate_locally(const std::string& model, std::string_view prompt,
                                     const edgellm::GenerateOptions& options) {
  auto m = edgellm::Model::Load(model);
  if (!m.ok()) {
    ADD_FAILURE() << "load " << model << ": " << m.status().ToString();
    return {};
  }
  edgellm::SessionOptions so;
  so.n_ctx = 512;
  auto s = edgellm::Session::Create(**m, so);
  if (!s.ok()) {
    ADD_FAILURE() << "session on " << model << ": " << s.status().ToString();
    return {};
  }
  auto g = (*s)->Generate(prompt, options);
  if (!g.ok()) {
    ADD_FAILURE() << "generate on " << model << ": " << g.status().ToString();
    return {};
  }
  return *g;
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

CliRun run_cli(const std::string& args) {
  const std::string err_path = fixture_dir() + "/cli-stderr-" + std::to_string(::getpid());
  const std::string cmd = std::string(EDGELLM_CLI) + " " + args + " 2>" + err_path;
  CliRun r{};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "cannot run " << cmd;
    r.rc = -1;
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_path);
  std::remove(err_path.c_str());
  return r;
}

}  // namespace testutil
