// Capabilities of this build, the whitelist (parsing, matching on a phone-like fixture tree),
// and every branch of the scenario policy.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "edgellm/policy.h"
#include "testutil/fake_device.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

// ---- Capabilities ----

std::set<std::string> proc_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    std::istringstream ss(line.substr(line.find(':') + 1));
    std::string f;
    while (ss >> f) flags.insert(f);
    break;
  }
  return flags;
}

TEST(Capabilities, CpuBackendDeviceAndFeaturesOfThisMachine) {
  const Capabilities c = read_capabilities();
  EXPECT_TRUE(c.has_backend("CPU"));
  EXPECT_TRUE(c.has_backend("cpu"));
  EXPECT_FALSE(c.has_backend("NoSuchBackend"));
  bool cpu_device = false;
  for (const BackendDevice& d : c.devices) {
    if (d.type == "cpu") {
      cpu_device = true;
      EXPECT_GT(d.memory_total_bytes, 0u) << d.name;
    }
  }
  EXPECT_TRUE(cpu_device);
  // ggml's feature checks agree with the kernel's flags where the build can use them: this
  // build is -march=native, so a feature the build reports must be one the CPU has.
  const std::set<std::string> flags = proc_cpu_flags();
  const std::set<std::string> reported(c.cpu_features.begin(), c.cpu_features.end());
#if defined(__x86_64__)
  ASSERT_FALSE(flags.empty());
  if (reported.count("AVX2")) {
    EXPECT_TRUE(flags.count("avx2"));
  }
  if (reported.count("FMA")) {
    EXPECT_TRUE(flags.count("fma"));
  }
  if (reported.count("AVX512")) {
    EXPECT_TRUE(flags.count("avx512f"));
  }
  EXPECT_EQ(reported.count("AVX2") == 1, flags.count("avx2") == 1);
  EXPECT_EQ(reported.count("NEON"), 0u);
#endif
}

TEST(Capabilities, OsNameFromOsRelease) {
  const std::string root = testutil::scratch_dir("osrel");
  std::filesystem::create_directories(root + "/etc");
  testutil::write_file(root + "/etc/os-release", "ID=harmonyos\nNAME=\"HarmonyOS NEXT\"\n");
  EXPECT_EQ(read_os_name(root), "HarmonyOS NEXT");
  EXPECT_EQ(read_os_name(root + "/missing"), "");
  EXPECT_FALSE(read_os_name().empty());  // this machine: os-release or uname
  std::filesystem::remove_all(root);
}

// ---- Whitelist ----

constexpr const char* kDoc = R"({
  "schema": "edgellm.whitelist", "version": 1,
  "platforms": [
    {"id": "sm8550-big", "soc": ["SM8550"], "ram_gib": [12, 0], "backend": "CPU",
     "max_params_b": 8},
    {"id": "sm8550", "soc": "sm8550", "os": ["Android", "HarmonyOS"], "ram_gib": [6, 12],
     "backend": "NPU", "max_params_b": 2, "max_model_bytes": 1500000000}
  ],
  "default": {"max_params_b": 1}
})";

TEST(Whitelist, ParsesAVersionedDocument) {
  auto w = parse_whitelist(kDoc);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->version, 1);
  ASSERT_EQ(w->platforms.size(), 2u);
  EXPECT_EQ(w->platforms[1].soc, std::vector<std::string>{"sm8550"});
  EXPECT_EQ(w->platforms[1].max_model_bytes, 1500000000u);
  EXPECT_DOUBLE_EQ(w->platforms[0].max_ram_gib, 0);
  EXPECT_DOUBLE_EQ(w->default_max_params_b, 1);
  ASSERT_FALSE(builtin_whitelist().platforms.empty());
  EXPECT_EQ(builtin_whitelist().version, 1);
}

TEST(Whitelist, RejectsMalformedDocumentsNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "not a JSON object"},
      {"{not json", "not a JSON object"},
      {R"({"schema":"x","version":1,"platforms":[]})", "schema"},
      {R"({"schema":"edgellm.whitelist","platforms":[]})", "version"},
      {R"({"schema":"edgellm.whitelist","version":2,"platforms":[]})", "version 2"},
      {R"({"schema":"edgellm.whitelist","version":1})", "platforms"},
      {R"({"schema":"edgellm.whitelist","version":1,"platforms":[{"soc":"a"}]})",
       "platforms[0].id"},
      {R"({"schema":"edgellm.whitelist","version":1,"platforms":[{"id":"a"}]})",
       "\"soc\" or an \"os\""},
      {R"({"schema":"edgellm.whitelist","version":1,"platforms":[{"id":"a","soc":[1]}]})",
       "platforms[0].soc"},
      {R"({"schema":"edgellm.whitelist","version":1,"platforms":[{"id":"a","soc":"s","ram_gib":[8,4]}]})",
       "ram_gib"},
      {R"({"schema":"edgellm.whitelist","version":1,"platforms":[{"id":"a","soc":"s","max_params_b":-1}]})",
       "max_params_b"},
      {R"({"schema":"edgellm.whitelist","version":1,"platforms":[{"id":"a","soc":"s"},{"id":"a","soc":"t"}]})",
       "repeats"},
      {R"({"schema":"edgellm.whitelist","version":1,"platforms":[],"default":3})", "default"},
  };
  for (const auto& [doc, field] : cases) {
    auto w = parse_whitelist(doc);
    ASSERT_FALSE(w.ok()) << doc;
    EXPECT_EQ(w.status().code(), Code::kInvalidArgument) << doc;
    EXPECT_NE(w.status().message().find(field), std::string::npos)
        << doc << " -> " << w.status().message();
  }
  auto missing = load_whitelist("/nonexistent/whitelist.json");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
}

class WhitelistMatch : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testutil::scratch_dir("policy");
    testutil::make_phone_tree(root_);  // 8 GB, "Qualcomm Technologies, Inc. SM8550 MTP"
    DeviceOptions o;
    o.root = root_;
    auto p = read_device_profile(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    phone_ = *p;
    auto w = parse_whitelist(kDoc);
    ASSERT_TRUE(w.ok());
    wl_ = *w;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
  DeviceProfile phone_;
  Whitelist wl_;
};

TEST_F(WhitelistMatch, MatchesSocOsAndRamAndFallsBackToCpuForAMissingBackend) {
  const PlatformVerdict v = match_platform(wl_, phone_, "HarmonyOS NEXT", read_capabilities());
  EXPECT_TRUE(v.whitelisted) << v.reason;
  EXPECT_EQ(v.rule_id, "sm8550");  // 8 GB: not the >= 12 GiB rule
  EXPECT_EQ(v.backend, "CPU");     // the rule's NPU backend is not in this build
  EXPECT_NE(v.reason.find("NPU is not in this build"), std::string::npos) << v.reason;
  std::string why;
  EXPECT_TRUE(model_allowed(v, 1.54, 986045632, &why)) << why;
  EXPECT_FALSE(model_allowed(v, 7.6, 4600000000, &why));
  EXPECT_NE(why.find("2B that rule sm8550"), std::string::npos) << why;
  EXPECT_FALSE(model_allowed(v, 1.8, 1600000000, &why));
  EXPECT_NE(why.find("model file"), std::string::npos) << why;
}

TEST_F(WhitelistMatch, BigRamRuleAndUnknownPlatforms) {
  DeviceProfile big = phone_;
  big.total_ram_bytes = 16ull << 30;
  PlatformVerdict v = match_platform(wl_, big, "Android", read_capabilities());
  EXPECT_EQ(v.rule_id, "sm8550-big");
  EXPECT_EQ(v.backend, "CPU");
  EXPECT_TRUE(model_allowed(v, 7.6, 4600000000, nullptr));

  // The right SoC on an OS no rule names, at 8 GiB: only the any-OS rule could match, and its
  // RAM range does not: the safe CPU path with the default caps.
  v = match_platform(wl_, phone_, "Linux", read_capabilities());
  EXPECT_FALSE(v.whitelisted);
  EXPECT_EQ(v.backend, "CPU");
  EXPECT_DOUBLE_EQ(v.max_params_b, 1);
  EXPECT_NE(v.reason.find("not whitelisted"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("sm8550-big matches the platform but not its 8 GiB"), std::string::npos)
      << v.reason;

  DeviceProfile other = phone_;
  other.soc_model = "";
  other.platform = "AMD EPYC";
  v = match_platform(wl_, other, "Debian GNU/Linux", read_capabilities());
  EXPECT_FALSE(v.whitelisted);
  std::string why;
  EXPECT_FALSE(model_allowed(v, 1.54, 986045632, &why));
  EXPECT_NE(why.find("the safe CPU path"), std::string::npos) << why;
}

// ---- Policy ----

PolicyInputs base() {
  PolicyInputs in;
  in.cloud_configured = true;
  return in;
}

TEST(Policy, PrivacyNeverLeavesTheDevice) {
  PolicyInputs in = base();
  in.privacy_required = true;
  EXPECT_EQ(decide(in).route, Route::kOnDevice);
  in.fits = false;
  in.fit_why = "needs 2.1 GiB, budget 1.6 GiB";
  const PolicyDecision d = decide(in);
  EXPECT_EQ(d.route, Route::kRefuse);  // even with a cloud configured
  EXPECT_NE(d.reason.find("privacy"), std::string::npos);
  EXPECT_NE(d.reason.find("needs 2.1 GiB"), std::string::npos) << d.reason;
  EXPECT_FALSE(d.local_possible);
}

TEST(Policy, OfflineUsesTheDeviceOrRefuses) {
  PolicyInputs in = base();
  in.offline = true;
  EXPECT_EQ(decide(in).route, Route::kOnDevice);
  in.model_state = ModelState::kDownloading;
  in.download_fraction = 0.42;
  const PolicyDecision d = decide(in);
  EXPECT_EQ(d.route, Route::kRefuse);
  EXPECT_NE(d.reason.find("still downloading (42%)"), std::string::npos) << d.reason;
}

TEST(Policy, LatencyTargetBelowTheCloudsRoundTrip) {
  PolicyInputs in = base();
  in.latency_target_ms = 50;
  PolicyDecision d = decide(in);
  EXPECT_EQ(d.route, Route::kOnDevice);
  EXPECT_NE(d.reason.find("50 ms"), std::string::npos) << d.reason;
  in.platform_allowed = false;
  in.platform_why = "7.60B parameters is more than the 2B that rule x allows";
  d = decide(in);
  EXPECT_EQ(d.route, Route::kCloud);
  EXPECT_NE(d.reason.find("miss the target"), std::string::npos) << d.reason;
  in.cloud_configured = false;
  EXPECT_EQ(decide(in).route, Route::kRefuse);
  // A target the cloud can meet demands nothing of the device.
  in = base();
  in.latency_target_ms = 500;
  EXPECT_EQ(decide(in).route, Route::kCloud);
}

TEST(Policy, WithoutADemandTheCloudUnlessTheCallerPrefersTheDevice) {
  PolicyInputs in = base();
  PolicyDecision d = decide(in);
  EXPECT_EQ(d.route, Route::kCloud);  // the seed's Decision 1
  EXPECT_TRUE(d.local_possible);
  in.prefer_on_device = true;
  EXPECT_EQ(decide(in).route, Route::kOnDevice);
  in.model_state = ModelState::kMissing;
  d = decide(in);
  EXPECT_EQ(d.route, Route::kCloud);
  EXPECT_NE(d.reason.find("not on the device"), std::string::npos) << d.reason;
  in.cloud_configured = false;
  d = decide(in);
  EXPECT_EQ(d.route, Route::kRefuse);
  EXPECT_NE(d.reason.find("no cloud endpoint"), std::string::npos) << d.reason;
  in = base();
  in.cloud_configured = false;
  EXPECT_EQ(decide(in).route, Route::kOnDevice);
  EXPECT_STREQ(route_name(Route::kOnDevice), "on-device");
}

}  // namespace
}  // namespace edgellm
