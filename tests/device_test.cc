// The real DeviceProfile reader on a phone-like fixture tree and on this machine.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "edgellm/device.h"
#include "testutil/fake_device.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testutil::scratch_dir("device");
    testutil::make_phone_tree(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
};

TEST_F(DeviceTest, PhoneTree) {
  DeviceOptions o;
  o.root = root_;
  auto p = read_device_profile(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->total_ram_bytes, 8ull << 30);
  EXPECT_EQ(p->available_ram_bytes, 3ull << 30);
  EXPECT_EQ(p->n_cpus, 8);
  ASSERT_EQ(p->clusters.size(), 3u);
  EXPECT_EQ(p->clusters[0].max_freq_khz, 3000000);
  EXPECT_EQ(p->clusters[0].cpus, std::vector<int>({7}));
  EXPECT_EQ(p->clusters[1].cpus, std::vector<int>({4, 5, 6}));
  EXPECT_EQ(p->clusters[2].cpus, std::vector<int>({0, 1, 2, 3}));
  EXPECT_EQ(p->big_cores(), 1);
  ASSERT_EQ(p->thermal.size(), 4u);
  EXPECT_EQ(p->thermal[0].type, "cpu-1-0-usr");
  EXPECT_DOUBLE_EQ(p->thermal[0].temp_c, 38.5);
  EXPECT_DOUBLE_EQ(p->max_temp_c(), 38.5);
  EXPECT_EQ(p->platform, "Qualcomm Technologies, Inc SM8550");
  EXPECT_EQ(p->soc_model, "Qualcomm Technologies, Inc. SM8550 MTP");
  EXPECT_GT(p->disk_free_bytes, 0u);
}

TEST_F(DeviceTest, RewrittenTemperatureIsReadAgain) {
  DeviceOptions o;
  o.root = root_;
  testutil::set_zone_temp(root_, 2, 47.25);
  auto p = read_device_profile(o);
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->thermal[2].temp_c, 47.25);
  EXPECT_DOUBLE_EQ(p->max_temp_c(), 47.25);
}

TEST_F(DeviceTest, NoCpufreqMeansOneCluster) {
  std::filesystem::remove_all(root_ + "/sys/devices/system/cpu");
  for (int cpu = 0; cpu < 4; ++cpu) {
    std::filesystem::create_directories(root_ + "/sys/devices/system/cpu/cpu" +
                                        std::to_string(cpu));
  }
  DeviceOptions o;
  o.root = root_;
  auto p = read_device_profile(o);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->clusters.size(), 1u);
  EXPECT_EQ(p->clusters[0].max_freq_khz, 0);
  EXPECT_EQ(p->big_cores(), 4);
}

TEST_F(DeviceTest, BrokenFilesAreClearErrorsOrSkipped) {
  testutil::write_file(root_ + "/sys/class/thermal/thermal_zone1/temp", "garbage\n");
  testutil::write_file(root_ + "/sys/devices/system/cpu/cpu3/cpufreq/cpuinfo_max_freq", "");
  DeviceOptions o;
  o.root = root_;
  auto p = read_device_profile(o);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->thermal[1].valid);
  EXPECT_EQ(p->clusters.size(), 4u);  // cpu3 lost its frequency: a cluster of its own at 0
  std::filesystem::remove(root_ + "/proc/meminfo");
  auto missing = read_device_profile(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kUnavailable);
  EXPECT_NE(missing.status().message().find("/proc/meminfo"), std::string::npos);
  testutil::write_file(root_ + "/proc/meminfo", "nonsense\n");
  EXPECT_EQ(read_device_profile(o).status().code(), Code::kCorruptData);
  DeviceOptions empty;
  empty.root = root_ + "/nothing-here";
  EXPECT_FALSE(read_device_profile(empty).ok());
  DeviceOptions bad_disk;
  bad_disk.disk_path = "/no/such/dir";
  EXPECT_EQ(read_device_profile(bad_disk).status().code(), Code::kUnavailable);
}

TEST(DeviceThisMachine, RealProcAndSys) {
  auto p = read_device_profile();
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_GT(p->total_ram_bytes, 512ull << 20);
  EXPECT_LE(p->available_ram_bytes, p->total_ram_bytes);
  EXPECT_EQ(p->n_cpus, static_cast<int>(std::thread::hardware_concurrency()));
  ASSERT_GE(p->clusters.size(), 1u);
  EXPECT_GT(p->disk_free_bytes, 0u);
}

}  // namespace
}  // namespace edgellm
