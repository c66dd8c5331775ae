// ModelStore end to end against a real HTTP server on loopback: pack -> pull -> kill -9 ->
// resume -> activate -> upgrade with the old version usable throughout -> gc; a crash at
// every install step; tampered and incompatible packages; a disk that fills up.
#include "edgellm/store.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "edgellm/edgellm.h"
#include "edgellm/package.h"
#include "store/sha256.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;
constexpr char kId[] = "tiny-chat";

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testutil::scratch_dir("store");
    serve_ = dir_ + "/serve";
    fs::create_directories(serve_);
    // A slow server (20 ms per request) so a download lasts long enough to be killed.
    server_.set_pre_routing_handler([this](const httplib::Request&, httplib::Response&) {
      ++requests_;
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_.load()));
      return httplib::Server::HandlerResponse::Unhandled;
    });
    ASSERT_TRUE(server_.set_mount_point("/", serve_));
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
    fs::remove_all(dir_);
  }

  // Packs a tiny model with weights seeded by `version` as version `version` under /v<N>/.
  Manifest Pack(uint32_t version, const std::string& folder = "") {
    const std::string src = dir_ + "/src-" + std::to_string(version) + ".gguf";
    if (!fs::exists(src)) {
      SynthOptions so;
      so.preset = "tiny";
      so.type = "Q8_0";
      so.seed = version;
      so.output = src;
      so.vocab_path = testutil::vocab_path();
      EXPECT_TRUE(synth_model(so).ok());
    }
    PackOptions po;
    po.id = kId;
    po.version = version;
    po.chunk_size = 1 << 20;
    po.out_dir = serve_ + "/" + (folder.empty() ? "v" + std::to_string(version) : folder);
    auto m = pack_model(src, po);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? *m : Manifest{};
  }
  std::string Url(const std::string& folder) {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + folder + "/manifest.json";
  }
  std::unique_ptr<ModelStore> Open(const std::string& root = "") {
    StoreOptions so;
    so.root = root.empty() ? dir_ + "/root" : root;
    auto s = ModelStore::Open(so);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static InstallOptions Fast() {
    InstallOptions io;
    io.download.concurrency = 2;
    io.download.max_retries = 1;
    io.download.backoff_ms = 10;
    return io;
  }
  // Loads `path` and generates 4 greedy tokens: the model is usable.
  static std::string Generate(const std::string& path) {
    auto m = Model::Load(path);
    if (!m.ok()) return "load failed: " + m.status().ToString();
    SessionOptions so;
    so.n_ctx = 64;
    so.warmup = false;
    auto s = Session::Create(**m, so);
    if (!s.ok()) return "session failed";
    GenerateOptions g;
    g.temperature = 0;
    g.max_tokens = 4;
    g.ignore_eos = true;
    auto r = (*s)->Generate("Hello", g);
    return r.ok() && r->stats.n_gen == 4 ? r->text : "generate failed";
  }
  // Runs `fn` in a child process and returns how it ended (signal number, or exit code + 1000).
  static int InChild(const std::function<void()>& fn) {
    const pid_t pid = fork();
    if (pid == 0) {
      fn();
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 1000 + WEXITSTATUS(status);
  }

  std::string dir_, serve_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<int> delay_ms_{20};
};

TEST_F(StoreTest, PullKillResumeUpgradeGc) {
  const Manifest m1 = Pack(1), m2 = Pack(2);
  ASSERT_NE(m1.sha256, m2.sha256);
  ASSERT_GE(m2.chunks.size(), 30u);
  auto store = Open();
  auto v1 = store->Install(Url("v1"), Fast());
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->version, 1u);
  const std::string text1 = Generate(v1->path);
  EXPECT_EQ(text1.find("failed"), std::string::npos) << text1;

  // kill -9 in the middle of v2's download.
  const int sig = InChild([&] {
    auto s = Open();
    InstallOptions io = Fast();
    io.download.on_progress = [](const DownloadProgress& p) {
      if (p.chunks_done >= 10) ::kill(::getpid(), SIGKILL);
      return true;
    };
    (void)s->Install(Url("v2"), io);
    _exit(3);  // finished before the kill: the test is too fast to mean anything
  });
  ASSERT_EQ(sig, SIGKILL);

  // v1 stays active and usable while v2 is pending.
  auto e = store->Ensure(kId, 2);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->installed);
  EXPECT_EQ(e->active_version, 1u);
  EXPECT_TRUE(e->upgrade_needed);
  EXPECT_EQ(Generate(e->path), text1);

  // Resume: verified chunks are reused, at most the chunks in flight are fetched again.
  DownloadReport report;
  InstallOptions io = Fast();
  io.report = &report;
  auto v2 = store->Install(Url("v2"), io);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->version, 2u);
  EXPECT_GE(report.chunks_reused, 10 - io.download.concurrency);
  EXPECT_EQ(report.chunks_reused + report.chunks_fetched, static_cast<int>(m2.chunks.size()));
  EXPECT_LE(report.bytes_fetched,
            m2.size - static_cast<uint64_t>(report.chunks_reused) * m2.chunk_size +
                io.download.concurrency * m2.chunk_size);
  EXPECT_TRUE(store->Verify(kId).ok());
  const std::string text2 = Generate(v2->path);
  EXPECT_EQ(text2.find("failed"), std::string::npos) << text2;
  EXPECT_NE(text2, text1);  // other weights

  auto list = store->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);  // v1 kept (keep_versions 2) until gc
  EXPECT_TRUE(store->Verify(kId, 1u).ok());
  ASSERT_TRUE(store->Gc(kId, 1).ok());
  list = store->List();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(list->front().version, 2u);
  EXPECT_TRUE(list->front().active);
  EXPECT_FALSE(fs::exists(v1->path));

  // Removing the only version removes the model; then nothing is active.
  EXPECT_EQ(store->Remove(kId, 7u).code(), Code::kNotFound);
  ASSERT_TRUE(store->Remove(kId, 2u).ok());
  EXPECT_EQ(store->Active(kId).status().code(), Code::kNotFound);
}

TEST_F(StoreTest, CrashAtEveryStepLeavesOldOrNewNeverAMix) {
  Pack(1);
  Pack(2);
  delay_ms_ = 0;
  auto store = Open();
  ASSERT_TRUE(store->Install(Url("v1"), Fast()).ok());
  for (const char* step : {"manifest", "download", "verify", "commit", "activate", "gc", "done"}) {
    const int how = InChild([&] {
      auto s = Open();
      InstallOptions io = Fast();
      io.on_step = [&](const char* now) {
        if (std::string(now) == step) ::kill(::getpid(), SIGKILL);
      };
      (void)s->Install(Url("v2"), io);
    });
    EXPECT_EQ(how, SIGKILL) << step;
    auto fresh = Open();  // as an app restarting after the crash
    auto act = fresh->Active(kId);
    ASSERT_TRUE(act.ok()) << step << ": " << act.status().ToString();
    EXPECT_TRUE(act->version == 1u || act->version == 2u) << step;
    EXPECT_TRUE(fresh->Verify(kId).ok()) << step << ": active v" << act->version << " is damaged";
    EXPECT_EQ(Generate(act->path).find("failed"), std::string::npos) << step;
    // Once the new version is committed, a crash leaves it installed (active or not).
    if (std::string(step) == "activate" || std::string(step) == "gc" || std::string(step) == "done") {
      EXPECT_TRUE(fresh->Verify(kId, 2u).ok()) << step;
    }
    // Roll back to v1 for the next step: remove v2 if it got in.
    auto list = fresh->List();
    ASSERT_TRUE(list.ok());
    if (act->version == 2u) {
      ASSERT_TRUE(fresh->Install(Url("v1"), Fast()).ok());  // v1 is installed: just activate
    }
    for (const auto& m : *list) {
      if (m.version == 2u) {
        ASSERT_TRUE(fresh->Remove(kId, 2u).ok()) << step;
      }
    }
  }
  auto v2 = store->Install(Url("v2"), Fast());
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->version, 2u);
}

TEST_F(StoreTest, RefusesTamperedIncompatibleAndUnreachablePackages) {
  Pack(1);
  auto store = Open();
  ASSERT_TRUE(store->Install(Url("v1"), Fast()).ok());
  const std::string manifest = testutil::read_file(serve_ + "/v1/manifest.json");
  auto variant = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    fs::create_directories(serve_ + "/" + name);
    fs::copy_file(serve_ + "/v1/" + nlohmann::json::parse(manifest)["file"].get<std::string>(),
                  serve_ + "/" + name + "/" + nlohmann::json::parse(manifest)["file"].get<std::string>(),
                  fs::copy_options::overwrite_existing);
    auto j = nlohmann::json::parse(manifest);
    j["version"] = 5;
    edit(j);
    testutil::write_file(serve_ + "/" + name + "/manifest.json", j.dump());
    return store->Install(Url(name), Fast());
  };
  // A chunk digest that does not match the bytes: detected, nothing installed.
  auto bad_chunk = variant("badchunk", [](nlohmann::json& j) {
    j["chunks"][3] = std::string(64, 'a');
  });
  EXPECT_EQ(bad_chunk.status().code(), Code::kCorruptData) << bad_chunk.status().ToString();
  auto bad_whole = variant("badwhole", [](nlohmann::json& j) { j["sha256"] = std::string(64, 'b'); });
  EXPECT_EQ(bad_whole.status().code(), Code::kCorruptData) << bad_whole.status().ToString();
  auto traversal = variant("traversal", [](nlohmann::json& j) { j["file"] = "../../x.gguf"; });
  EXPECT_EQ(traversal.status().code(), Code::kCorruptData);
  auto toolchain = variant("toolchain", [](nlohmann::json& j) { j["toolchain"] = "b1-0000000"; });
  EXPECT_EQ(toolchain.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(toolchain.status().message().find("toolchain"), std::string::npos);
  auto format = variant("format", [](nlohmann::json& j) { j["required_format_version"] = 99; });
  EXPECT_EQ(format.status().code(), Code::kFailedPrecondition);
  fs::create_directories(serve_ + "/notjson");
  testutil::write_file(serve_ + "/notjson/manifest.json", "<html>gateway</html>");
  EXPECT_EQ(store->Install(Url("notjson"), Fast()).status().code(), Code::kCorruptData);
  EXPECT_EQ(store->Install(Url("missing"), Fast()).status().code(), Code::kNotFound);
  EXPECT_EQ(store->Install("http://127.0.0.1:1/x/manifest.json", Fast()).status().code(),
            Code::kUnavailable);
  EXPECT_EQ(store->Install("ftp://example/manifest.json", Fast()).status().code(),
            Code::kInvalidArgument);
  // Through all of it, v1 stayed active and intact.
  auto act = store->Active(kId);
  ASSERT_TRUE(act.ok());
  EXPECT_EQ(act->version, 1u);
  EXPECT_TRUE(store->Verify(kId).ok());
  // A file damaged on disk after install is caught by Verify, naming the chunk.
  {
    std::fstream f(act->path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3 * (1 << 20) + 17);
    f.put('\x5a');
  }
  Status v = store->Verify(kId);
  EXPECT_EQ(v.code(), Code::kCorruptData);
  EXPECT_NE(v.message().find("chunk 3"), std::string::npos) << v.ToString();
}

TEST_F(StoreTest, DiskSpaceIsCheckedFirstAndAFullDiskKeepsTheActiveModel) {
  Pack(1);
  Pack(2);
  // A manifest for a 1 TiB file is refused before any byte is fetched.
  {
    auto j = nlohmann::json::parse(testutil::read_file(serve_ + "/v1/manifest.json"));
    j["version"] = 9;
    j["size"] = 1ull << 40;
    j["chunk_size"] = 1ull << 30;
    j["chunks"] = std::vector<std::string>(1024, std::string(64, 'c'));
    fs::create_directories(serve_ + "/huge");
    testutil::write_file(serve_ + "/huge/manifest.json", j.dump());
  }
  auto store = Open();
  ASSERT_TRUE(store->Install(Url("v1"), Fast()).ok());
  const int before = requests_.load();
  auto huge = store->Install(Url("huge"), Fast());
  EXPECT_EQ(huge.status().code(), Code::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("needs"), std::string::npos) << huge.status().ToString();
  EXPECT_EQ(requests_.load(), before + 1);  // the manifest only

  // A real small filesystem that another app fills while the download runs.
  const std::string small = dir_ + "/small";
  fs::create_directories(small);
  ASSERT_EQ(::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=112m"), 0)
      << "mounting a 112 MiB tmpfs needs root (.ci/run runs as root): " << std::strerror(errno);
  {
    auto s = Open(small + "/root");
    ASSERT_TRUE(s->Install(Url("v1"), Fast()).ok());  // ~41 MiB, fits
    InstallOptions io = Fast();
    io.on_step = [&](const char* step) {
      if (std::string(step) == "download") {  // passes the free-space check, then the disk fills
        std::ofstream filler(small + "/filler", std::ios::binary);
        std::string mb(1 << 20, 'x');
        for (int i = 0; i < 40; ++i) filler.write(mb.data(), mb.size());
      }
    };
    auto v2 = s->Install(Url("v2"), io);
    EXPECT_EQ(v2.status().code(), Code::kResourceExhausted) << v2.status().ToString();
    auto act = s->Active(kId);
    ASSERT_TRUE(act.ok());
    EXPECT_EQ(act->version, 1u);
    EXPECT_TRUE(s->Verify(kId).ok());
    EXPECT_EQ(Generate(act->path).find("failed"), std::string::npos);
  }
  ASSERT_EQ(::umount(small.c_str()), 0);
}

// The same pull, kill -9 and resume against a stock server: Debian's nginx, started by
// scripts/test.sh (scripts/nginx.sh) with its Range support as shipped.
TEST(StoreNginxTest, PullKillResumeFromStockNginx) {
  const char* url = std::getenv("EDGELLM_NGINX_URL");
  const char* www = std::getenv("EDGELLM_NGINX_ROOT");
  ASSERT_TRUE(url && www) << "run through scripts/test.sh, or start nginx with scripts/nginx.sh "
                             "start and export EDGELLM_NGINX_URL and EDGELLM_NGINX_ROOT";
  const std::string sub = "edgellm-store-" + std::to_string(::getpid());
  PackOptions po;
  po.id = kId;
  po.version = 1;
  po.chunk_size = 1 << 20;
  po.out_dir = std::string(www) + "/" + sub;
  auto m = pack_model(testutil::synth_model("tiny", "Q8_0"), po);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::string manifest_url = std::string(url) + "/" + sub + "/manifest.json";
  const std::string root = testutil::scratch_dir("nginx-store");
  StoreOptions so;
  so.root = root;
  const pid_t pid = fork();
  if (pid == 0) {
    auto s = ModelStore::Open(so);
    InstallOptions io;
    io.download.concurrency = 2;
    io.download.on_progress = [](const DownloadProgress& p) {
      if (p.chunks_done >= 8) ::kill(::getpid(), SIGKILL);
      return true;
    };
    if (s.ok()) (void)(*s)->Install(manifest_url, io);
    _exit(3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the pull ended before the kill";
  auto s = ModelStore::Open(so);
  ASSERT_TRUE(s.ok());
  DownloadReport report;
  InstallOptions io;
  io.download.concurrency = 2;
  io.report = &report;
  auto got = (*s)->Install(manifest_url, io);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_GE(report.chunks_reused, 8 - io.download.concurrency);
  EXPECT_LE(report.bytes_fetched,
            m->size - static_cast<uint64_t>(report.chunks_reused) * m->chunk_size +
                io.download.concurrency * m->chunk_size);
  EXPECT_TRUE((*s)->Verify(kId).ok());
  auto digest = store::sha256_file(got->path);
  ASSERT_TRUE(digest.ok());
  EXPECT_EQ(*digest, m->sha256);
  fs::remove_all(po.out_dir);
  fs::remove_all(root);
}

// Faults a stock server produces on its own, without a fault-injecting handler: a URL it does
// not have (404, not retried), a file replaced by a shorter one (Content-Range total !=
// manifest), and a file that rotted on the server (one flipped byte: the chunk fails its hash
// on every attempt; the chunks verified before are kept and reused once the server is fixed).
// The installed version stays active and intact through all of them.
TEST(StoreNginxTest, FaultsFromStockNginx) {
  const char* url = std::getenv("EDGELLM_NGINX_URL");
  const char* www = std::getenv("EDGELLM_NGINX_ROOT");
  ASSERT_TRUE(url && www) << "run through scripts/test.sh, or start nginx with scripts/nginx.sh "
                             "start and export EDGELLM_NGINX_URL and EDGELLM_NGINX_ROOT";
  const std::string sub = "edgellm-faults-" + std::to_string(::getpid());
  const std::string base = std::string(url) + "/" + sub;
  PackOptions po;
  po.id = kId;
  po.chunk_size = 1 << 20;
  po.version = 1;
  po.out_dir = std::string(www) + "/" + sub + "/v1";
  auto m1 = pack_model(testutil::synth_model("tiny", "Q8_0"), po);
  ASSERT_TRUE(m1.ok()) << m1.status().ToString();
  po.version = 2;
  po.out_dir = std::string(www) + "/" + sub + "/v2";
  auto m2 = pack_model(testutil::synth_model("tiny", "Q4_0"), po);
  ASSERT_TRUE(m2.ok()) << m2.status().ToString();
  const std::string served = po.out_dir + "/" + m2->file;

  StoreOptions so;
  so.root = testutil::scratch_dir("nginx-faults");
  auto s = ModelStore::Open(so);
  ASSERT_TRUE(s.ok());
  InstallOptions io;
  io.download.max_retries = 2;
  io.download.backoff_ms = 10;
  ASSERT_TRUE((*s)->Install(base + "/v1/manifest.json", io).ok());
  auto intact = [&] {
    auto act = (*s)->Active(kId);
    return act.ok() && act->version == 1 && (*s)->Verify(kId).ok();
  };

  auto missing = (*s)->Install(base + "/nowhere/manifest.json", io);
  EXPECT_EQ(missing.status().code(), Code::kNotFound) << missing.status().ToString();
  EXPECT_TRUE(intact());

  // The served file replaced by a shorter one: nginx answers with its real size.
  fs::copy_file(served, served + ".orig");
  fs::resize_file(served, m2->size / 2);
  auto shorter = (*s)->Install(base + "/v2/manifest.json", io);
  EXPECT_EQ(shorter.status().code(), Code::kCorruptData) << shorter.status().ToString();
  EXPECT_NE(shorter.status().message().find("do not match"), std::string::npos)
      << shorter.status().ToString();
  EXPECT_TRUE(intact());
  fs::copy_file(served + ".orig", served, fs::copy_options::overwrite_existing);

  // One flipped byte in chunk 3 of the served v2.
  const uint64_t bad_at = 3 * m2->chunk_size + 12345;
  auto flip = [&] {
    std::fstream f(served, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(bad_at));
    const char c = static_cast<char>(f.get() ^ 0x40);
    f.seekp(static_cast<std::streamoff>(bad_at));
    f.put(c);
  };
  flip();
  DownloadReport report;
  io.report = &report;
  auto rotten = (*s)->Install(base + "/v2/manifest.json", io);
  EXPECT_EQ(rotten.status().code(), Code::kCorruptData) << rotten.status().ToString();
  EXPECT_NE(rotten.status().message().find("chunk 3"), std::string::npos)
      << rotten.status().ToString();
  EXPECT_TRUE(intact());
  flip();  // the server's copy repaired
  auto v2 = (*s)->Install(base + "/v2/manifest.json", io);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->version, 2u);
  // Chunks 0-2 were verified before chunk 3 failed its third attempt: they are reused.
  EXPECT_GE(report.chunks_reused, 3);
  EXPECT_EQ(report.chunks_reused + report.chunks_fetched, report.chunks_total);
  EXPECT_EQ(report.refetches, 0);
  EXPECT_TRUE((*s)->Verify(kId).ok());

  fs::remove_all(std::string(www) + "/" + sub);
  fs::remove_all(so.root);
}

}  // namespace
}  // namespace edgellm
