// Packaging and quantization: pack_model's manifest against the real file, manifest parsing
// that refuses every malformed field by name, quantize_model's stamp, and the CLI.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "ggml.h"
#include "gguf.h"
#include "store/sha256.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// A loaded GGUF (data included) that tests can edit and write back.
struct Gguf {
  gguf_context* g = nullptr;
  ggml_context* ctx = nullptr;
  explicit Gguf(const std::string& path) {
    gguf_init_params p{/*no_alloc=*/false, &ctx};
    g = gguf_init_from_file(path.c_str(), p);
  }
  ~Gguf() {
    if (g) gguf_free(g);
    if (ctx) ggml_free(ctx);
  }
  // A fresh GGUF with this one's metadata and tensors (ggml writes tensor data it holds).
  void Write(const std::string& path) {
    std::unique_ptr<gguf_context, decltype(&gguf_free)> out(gguf_init_empty(), &gguf_free);
    gguf_set_kv(out.get(), g);
    for (int64_t i = 0; i < gguf_get_n_tensors(g); ++i) {
      gguf_add_tensor(out.get(), ggml_get_tensor(ctx, gguf_get_tensor_name(g, i)));
    }
    ASSERT_TRUE(gguf_write_to_file(out.get(), path.c_str(), false));
  }
};

class PackageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = testutil::synth_model("tiny", "Q8_0");
    dir_ = testutil::scratch_dir("package");
    // The quantization tests need an unquantized input.
    f16_ = dir_ + "/tiny-F16.gguf";
    SynthOptions o;
    o.preset = "tiny";
    o.type = "F16";
    o.output = f16_;
    o.vocab_path = testutil::vocab_path();
    Status st = synth_model(o);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static Result<Manifest> Pack(const std::string& model, const std::string& out,
                               uint64_t chunk = 1ull << 20) {
    PackOptions o;
    o.id = "tiny-chat";
    o.version = 3;
    o.chunk_size = chunk;
    o.out_dir = out;
    return pack_model(model, o);
  }

  static inline std::string model_, dir_, f16_;
};

TEST_F(PackageTest, ManifestDescribesTheFileChunkByChunk) {
  const std::string out = dir_ + "/pkg";
  auto m = Pack(model_, out);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const uint64_t size = fs::file_size(model_);
  const uint64_t chunk = 1ull << 20;
  EXPECT_EQ(m->schema, 1u);
  EXPECT_EQ(m->id, "tiny-chat");
  EXPECT_EQ(m->version, 3u);
  EXPECT_EQ(m->file, "tiny-Q8_0.gguf");
  EXPECT_EQ(m->size, size);
  EXPECT_EQ(m->sha256, store::sha256_file(model_).value());
  EXPECT_EQ(m->chunk_size, chunk);
  ASSERT_EQ(m->chunks.size(), (size + chunk - 1) / chunk);
  for (size_t i = 0; i < m->chunks.size(); ++i) {
    const uint64_t off = i * chunk;
    const uint64_t len = std::min(chunk, size - off);
    EXPECT_EQ(m->chunks[i], store::sha256_file(model_, off, len).value()) << i;
  }
  EXPECT_EQ(m->quant, "Q8_0");
  EXPECT_EQ(m->architecture, "qwen2");
  EXPECT_GT(m->n_params, 0u);
  EXPECT_EQ(m->required_format_version, kFormatVersion);
  EXPECT_EQ(m->toolchain, llama_build());  // the synth fixture carries no stamp
  PlanOptions po;
  po.n_ctx = 2048;
  po.ram_bytes = 8ull << 30;
  auto plan = plan_memory(model_, po);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(m->plan_n_ctx, 2048);
  EXPECT_EQ(m->plan_ram_bytes, plan->total_bytes);

  // The folder holds the copy and the manifest, nothing else; both say the same.
  EXPECT_EQ(list_dir(out), (std::vector<std::string>{"manifest.json", "tiny-Q8_0.gguf"}));
  EXPECT_EQ(store::sha256_file(out + "/tiny-Q8_0.gguf").value(), m->sha256);
  auto on_disk = manifest_from_json(testutil::read_file(out + "/manifest.json"));
  ASSERT_TRUE(on_disk.ok()) << on_disk.status().ToString();
  EXPECT_EQ(*on_disk, *m);

  // Packing the copy where it lies hashes it in place and gives the same manifest.
  auto again = Pack(out + "/tiny-Q8_0.gguf", out);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *m);
  EXPECT_EQ(list_dir(out), (std::vector<std::string>{"manifest.json", "tiny-Q8_0.gguf"}));
}

Manifest SmallManifest() {
  Manifest m;
  m.id = "qwen2.5-1.5b-chat";
  m.version = 2;
  m.file = "model.gguf";
  m.size = 100000;
  m.sha256 = std::string(64, 'a');
  m.chunk_size = 65536;
  m.chunks = {std::string(64, '0'), std::string(64, 'f')};
  m.quant = "Q4_K_M";
  m.architecture = "qwen2";
  m.n_params = 1500000000;
  m.toolchain = "v0.4.0 (80fb11a)";
  m.plan_n_ctx = 2048;
  m.plan_ram_bytes = 1ull << 30;
  return m;
}

TEST_F(PackageTest, JsonRoundTripAndUnknownKeys) {
  const Manifest m = SmallManifest();
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).ToString();
  auto back = manifest_from_json(manifest_to_json(m));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, m);
  // A newer writer's extra keys are ignored.
  Json j = Json::parse(manifest_to_json(m));
  j["signature"] = "ed25519:...";
  j["extra"] = {{"nested", {1, 2, 3}}};
  auto extra = manifest_from_json(j.dump());
  ASSERT_TRUE(extra.ok()) << extra.status().ToString();
  EXPECT_EQ(*extra, m);
  // Well-formed but too new for this runtime: parsed, then refused by the support check.
  j["required_format_version"] = kFormatVersion + 1;
  auto newer = manifest_from_json(j.dump());
  ASSERT_TRUE(newer.ok()) << newer.status().ToString();
  EXPECT_TRUE(check_manifest_supported(m).ok());
  Status st = check_manifest_supported(*newer);
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("update edgellm"), std::string::npos) << st.message();
}

TEST_F(PackageTest, ParsingRefusesEveryBadFieldByName) {
  const Json good = Json::parse(manifest_to_json(SmallManifest()));
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
    const char* field;  // the message must start "manifest: <field>"
  };
  const std::vector<Case> cases = {
      {"uppercase hex chunk", [](Json& j) { j["chunks"][1] = std::string(64, 'F'); }, "chunks[1]"},
      {"short chunk digest", [](Json& j) { j["chunks"][0] = "abc"; }, "chunks[0]"},
      {"chunk not a string", [](Json& j) { j["chunks"][0] = 7; }, "chunks[0]"},
      {"non-hex sha256", [](Json& j) { j["sha256"] = std::string(63, 'a') + "g"; }, "sha256"},
      {"one chunk too many", [](Json& j) { j["chunks"].push_back(std::string(64, '1')); },
       "chunks"},
      {"chunks not an array", [](Json& j) { j["chunks"] = "x"; }, "chunks"},
      {"path traversal", [](Json& j) { j["file"] = "../../etc/passwd"; }, "file"},
      {"subfolder", [](Json& j) { j["file"] = "models/model.gguf"; }, "file"},
      {"dot dot", [](Json& j) { j["file"] = ".."; }, "file"},
      {"version 0", [](Json& j) { j["version"] = 0; }, "version"},
      {"version past uint32", [](Json& j) { j["version"] = 1ull << 32; }, "version"},
      {"negative size", [](Json& j) { j["size"] = -5; }, "size"},
      {"size as a string", [](Json& j) { j["size"] = "100000"; }, "size"},
      {"size past uint64", [](Json& j) { j["size"] = 1e30; }, "size"},
      {"chunk_size below 64 KiB", [](Json& j) { j["chunk_size"] = 4096; }, "chunk_size"},
      {"chunk_size above 1 GiB", [](Json& j) { j["chunk_size"] = 1ull << 40; }, "chunk_size"},
      {"fractional n_params", [](Json& j) { j["n_params"] = 1.5; }, "n_params"},
      {"id with a slash", [](Json& j) { j["id"] = "qwen/evil"; }, "id"},
      {"id upper case", [](Json& j) { j["id"] = "Qwen"; }, "id"},
      {"id too long", [](Json& j) { j["id"] = std::string(65, 'a'); }, "id"},
      {"id only dots", [](Json& j) { j["id"] = ".."; }, "id"},
      {"schema 2", [](Json& j) { j["schema"] = 2; }, "schema"},
      {"format version 0", [](Json& j) { j["required_format_version"] = 0; },
       "required_format_version"},
      {"plan_n_ctx past int32", [](Json& j) { j["plan_n_ctx"] = 1ull << 31; }, "plan_n_ctx"},
      {"toolchain not a string", [](Json& j) { j["toolchain"] = Json::array(); }, "toolchain"},
      {"missing sha256", [](Json& j) { j.erase("sha256"); }, "sha256"},
      {"missing chunks", [](Json& j) { j.erase("chunks"); }, "chunks"},
      {"missing schema", [](Json& j) { j.erase("schema"); }, "schema"},
  };
  for (const Case& c : cases) {
    Json j = good;
    c.edit(j);
    auto m = manifest_from_json(j.dump());
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_EQ(m.status().code(), Code::kCorruptData) << c.what;
    EXPECT_EQ(m.status().message().rfind(std::string("manifest: ") + c.field + " ", 0), 0u)
        << c.what << ": " << m.status().message();
  }
  // Not a manifest at all.
  const std::string text = good.dump();
  for (const std::string& bad :
       {std::string("not json {"), text.substr(0, text.size() / 2), std::string("[1, 2]"),
        std::string("\"manifest\""), std::string("")}) {
    auto m = manifest_from_json(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.status().code(), Code::kCorruptData);
    EXPECT_EQ(m.status().message().rfind("manifest: ", 0), 0u) << m.status().message();
  }
}

TEST_F(PackageTest, CorruptModelLeavesNoManifest) {
  const std::string cut = dir_ + "/cut.gguf";
  fs::copy_file(model_, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  const std::string out = dir_ + "/pkg-cut";
  auto m = Pack(cut, out);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kCorruptData) << m.status().ToString();
  EXPECT_FALSE(fs::exists(out + "/manifest.json"));
  EXPECT_FALSE(fs::exists(out));  // checked before anything was created
}

TEST_F(PackageTest, CancelLeavesNothing) {
  for (bool existing : {false, true}) {
    const std::string out = dir_ + "/pkg-cancel-" + std::to_string(existing);
    if (existing) {
      fs::create_directories(out);
      testutil::write_file(out + "/keep.txt", "mine");
    }
    PackOptions o;
    o.id = "tiny";
    o.chunk_size = 1ull << 20;
    o.out_dir = out;
    int calls = 0;
    o.on_progress = [&](uint64_t done, uint64_t total) {
      EXPECT_LE(done, total);
      return ++calls < 3;
    };
    auto m = pack_model(model_, o);
    EXPECT_EQ(m.status().code(), Code::kCancelled);
    EXPECT_EQ(calls, 3);
    if (existing) {
      EXPECT_EQ(list_dir(out), std::vector<std::string>{"keep.txt"});
    } else {
      EXPECT_FALSE(fs::exists(out));  // pack made it, and removed it again
    }
  }
}

TEST_F(PackageTest, BadOptionsAreClearBeforeAnyWork) {
  PackOptions o;
  o.out_dir = dir_ + "/pkg-bad";
  o.id = "Not An Id";
  auto m = pack_model(model_, o);
  EXPECT_EQ(m.status().code(), Code::kInvalidArgument);
  EXPECT_NE(m.status().message().find("id"), std::string::npos) << m.status().message();
  o.id = "ok";
  o.version = 0;
  EXPECT_EQ(pack_model(model_, o).status().code(), Code::kInvalidArgument);
  o.version = 1;
  o.chunk_size = 1000;
  m = pack_model(model_, o);
  EXPECT_EQ(m.status().code(), Code::kInvalidArgument);
  EXPECT_NE(m.status().message().find("chunk_size"), std::string::npos) << m.status().message();
  o.chunk_size = 1ull << 20;
  EXPECT_EQ(pack_model(dir_ + "/missing.gguf", o).status().code(), Code::kNotFound);
  o.out_dir.clear();
  EXPECT_EQ(pack_model(model_, o).status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_ + "/pkg-bad"));
}

TEST_F(PackageTest, PackReadsTheStampWhenTheFileHasOne) {
  const std::string stamped = dir_ + "/stamped.gguf";
  {
    Gguf g(model_);
    ASSERT_NE(g.g, nullptr);
    gguf_set_val_str(g.g, "edgellm.toolchain", "b4242-custom");
    gguf_set_val_u32(g.g, "edgellm.format_version", 1);
    g.Write(stamped);
  }
  auto m = Pack(stamped, dir_ + "/pkg-stamped");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->toolchain, "b4242-custom");
  EXPECT_EQ(m->required_format_version, 1u);
  {
    Gguf g(model_);
    gguf_set_val_u32(g.g, "edgellm.format_version", kFormatVersion + 1);
    g.Write(stamped);
  }
  auto newer = Pack(stamped, dir_ + "/pkg-newer");
  EXPECT_EQ(newer.status().code(), Code::kFailedPrecondition) << newer.status().ToString();
  EXPECT_FALSE(fs::exists(dir_ + "/pkg-newer"));
}

// Metadata of `path` as (u32 format version, toolchain); 0/"" when absent or mistyped.
std::pair<uint32_t, std::string> read_stamp(const std::string& path) {
  gguf_init_params p{/*no_alloc=*/true, nullptr};
  std::unique_ptr<gguf_context, decltype(&gguf_free)> g(gguf_init_from_file(path.c_str(), p),
                                                        &gguf_free);
  if (!g) return {0, ""};
  std::pair<uint32_t, std::string> out{0, ""};
  const int64_t f = gguf_find_key(g.get(), "edgellm.format_version");
  if (f >= 0 && gguf_get_kv_type(g.get(), f) == GGUF_TYPE_UINT32) {
    out.first = gguf_get_val_u32(g.get(), f);
  }
  const int64_t t = gguf_find_key(g.get(), "edgellm.toolchain");
  if (t >= 0 && gguf_get_kv_type(g.get(), t) == GGUF_TYPE_STRING) {
    out.second = gguf_get_val_str(g.get(), t);
  }
  return out;
}

bool no_partials(const std::string& dir) {
  for (const std::string& n : list_dir(dir)) {
    if (n.find(".partial.") != std::string::npos) return false;
  }
  return true;
}

TEST_F(PackageTest, QuantizeStampsFormatAndToolchain) {
  QuantizeOptions o;
  o.input = f16_;
  o.output = dir_ + "/tiny-Q4_K_M.gguf";
  o.type = "q4_k_m";
  o.n_threads = 2;
  std::vector<float> progress;
  o.on_progress = [&](float f) { progress.push_back(f); };
  Status st = quantize_model(o);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), 1.0f);
  auto model = Model::Load(o.output);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->info().quant, "Q4_K_M");
  const auto [format, toolchain] = read_stamp(o.output);
  EXPECT_EQ(format, kFormatVersion);
  EXPECT_EQ(toolchain, llama_build());
  EXPECT_TRUE(no_partials(dir_));

  // A quantized file is refused as input unless requantizing is asked for.
  QuantizeOptions re = o;
  re.input = o.output;
  re.output = dir_ + "/requant.gguf";
  re.type = "Q4_0";
  st = quantize_model(re);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--allow-requantize"), std::string::npos) << st.message();
  // The output may not be the input.
  re = o;
  re.output = f16_;
  EXPECT_EQ(quantize_model(re).code(), Code::kInvalidArgument);
  EXPECT_TRUE(fs::exists(f16_));
}

// A legacy .dat or GGUF imatrix with ones for every matrix of `model`.
void write_imatrix(const std::string& model, const std::string& path, bool gguf_format) {
  std::vector<std::pair<std::string, int64_t>> mats;  // name, ne0
  ggml_context* meta = nullptr;
  gguf_init_params pm{/*no_alloc=*/true, &meta};
  gguf_context* g2 = gguf_init_from_file(model.c_str(), pm);
  ASSERT_NE(g2, nullptr);
  for (ggml_tensor* t = ggml_get_first_tensor(meta); t; t = ggml_get_next_tensor(meta, t)) {
    if (ggml_n_dims(t) == 2) mats.emplace_back(ggml_get_name(t), t->ne[0]);
  }
  gguf_free(g2);
  ggml_free(meta);
  if (!gguf_format) {
    std::string bytes;
    auto put = [&](const void* d, size_t n) { bytes.append(static_cast<const char*>(d), n); };
    const int32_t n = static_cast<int32_t>(mats.size());
    put(&n, 4);
    for (const auto& [name, ne0] : mats) {
      const int32_t len = static_cast<int32_t>(name.size()), ncall = 10, nval = ne0;
      put(&len, 4);
      put(name.data(), name.size());
      put(&ncall, 4);
      put(&nval, 4);
      const std::vector<float> v(static_cast<size_t>(ne0), 10.0f);
      put(v.data(), v.size() * sizeof(float));
    }
    testutil::write_file(path, bytes);
    return;
  }
  ggml_init_params ip{mats.size() * 2 * (ggml_tensor_overhead() + 4096 * 4) + (1 << 20), nullptr,
                      false};
  std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init(ip), &ggml_free);
  std::unique_ptr<gguf_context, decltype(&gguf_free)> out(gguf_init_empty(), &gguf_free);
  const char* datasets[] = {"test"};
  gguf_set_arr_str(out.get(), "imatrix.datasets", datasets, 1);
  gguf_set_val_u32(out.get(), "imatrix.chunk_count", 1);
  gguf_set_val_u32(out.get(), "imatrix.chunk_size", 512);
  for (const auto& [name, ne0] : mats) {
    ggml_tensor* sums = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, ne0, 1);
    ggml_set_name(sums, (name + ".in_sum2").c_str());
    for (int64_t i = 0; i < ne0; ++i) static_cast<float*>(sums->data)[i] = 3.0f;
    ggml_tensor* counts = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 1, 1);
    ggml_set_name(counts, (name + ".counts").c_str());
    static_cast<float*>(counts->data)[0] = 3.0f;
    gguf_add_tensor(out.get(), sums);
    gguf_add_tensor(out.get(), counts);
  }
  ASSERT_TRUE(gguf_write_to_file(out.get(), path.c_str(), false));
}

TEST_F(PackageTest, QuantizeWithImatrixBothFormats) {
  // K-quants search scales weighted by the importance when there is one: different bytes.
  QuantizeOptions o;
  o.input = f16_;
  o.output = dir_ + "/plain-Q4_K_M.gguf";
  o.n_threads = 2;
  ASSERT_TRUE(quantize_model(o).ok());
  const std::string plain = testutil::read_file(o.output);
  for (bool gguf_format : {false, true}) {
    const std::string imatrix = dir_ + (gguf_format ? "/imatrix.gguf" : "/imatrix.dat");
    write_imatrix(f16_, imatrix, gguf_format);
    o.output = dir_ + "/imatrix-Q4_K_M.gguf";
    o.imatrix_path = imatrix;
    Status st = quantize_model(o);
    ASSERT_TRUE(st.ok()) << gguf_format << " " << st.ToString();
    LoadOptions lo;
    lo.metadata_only = true;
    auto model = Model::Load(o.output, lo);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_EQ((*model)->info().quant, "Q4_K_M");
    const std::string with = testutil::read_file(o.output);
    EXPECT_EQ(with.size(), plain.size());
    EXPECT_NE(with, plain) << "the imatrix was not used (" << imatrix << ")";
  }
}

TEST_F(PackageTest, QuantizeErrorsLeaveNoOutput) {
  const std::string out = dir_ + "/never.gguf";
  QuantizeOptions o;
  o.input = f16_;
  o.output = out;
  o.imatrix_path = dir_ + "/no-such.imatrix";
  Status st = quantize_model(o);
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("imatrix"), std::string::npos) << st.message();

  testutil::write_file(dir_ + "/junk.imatrix", std::string("\xff\xff\xff\x7f garbage", 12));
  o.imatrix_path = dir_ + "/junk.imatrix";
  st = quantize_model(o);
  EXPECT_EQ(st.code(), Code::kCorruptData);
  EXPECT_NE(st.message().find("imatrix"), std::string::npos) << st.message();

  o.imatrix_path.clear();
  o.type = "Q9_Z";
  st = quantize_model(o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("Q4_K_M"), std::string::npos) << st.message();  // lists choices

  o.type = "Q4_K_M";
  o.output = dir_ + "/no-such-folder/out.gguf";
  EXPECT_EQ(quantize_model(o).code(), Code::kNotFound);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(no_partials(dir_));
}

using testutil::CliRun;
CliRun Cli(const std::string& args) { return testutil::run_cli(args); }

TEST_F(PackageTest, Cli) {
  const std::string out = dir_ + "/pkg-cli";
  CliRun r = Cli("pack " + model_ + " --id tiny --version 2 --chunk 1MiB -o " + out + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto m = manifest_from_json(r.out);
  ASSERT_TRUE(m.ok()) << m.status().ToString() << r.out;
  EXPECT_EQ(m->version, 2u);
  EXPECT_EQ(m->chunk_size, 1ull << 20);
  EXPECT_EQ(r.out, testutil::read_file(out + "/manifest.json"));
  CliRun plain = Cli("pack " + model_ + " --id tiny --version 2 -o " + out);
  ASSERT_EQ(plain.rc, 0) << plain.err;
  EXPECT_NE(plain.out.find(m->sha256), std::string::npos) << plain.out;
  EXPECT_EQ(Cli("pack " + model_ + " --id tiny --version 2 --chunk lots -o " + out).rc, 1);
  EXPECT_EQ(Cli("pack " + model_ + " --id 'B A D' --version 2 -o " + out).rc, 1);

  CliRun bad = Cli("quantize " + f16_ + " " + dir_ + "/cli.gguf --type q9_z");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("unknown type"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir_ + "/cli.gguf"));
  CliRun q = Cli("quantize " + f16_ + " " + dir_ + "/cli.gguf --type q8_0 --threads 2");
  ASSERT_EQ(q.rc, 0) << q.err;
  EXPECT_NE(q.err.find("Q8_0"), std::string::npos) << q.err;
  for (const char* sub : {"pack --help", "quantize --help"}) {
    CliRun h = Cli(sub);
    EXPECT_EQ(h.rc, 0) << sub;
    EXPECT_NE(h.out.find("Usage"), std::string::npos) << h.out;
  }
}

}  // namespace
}  // namespace edgellm
