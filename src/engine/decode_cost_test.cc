#include "engine/decode_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace edgellm::engine {
namespace {

// ms of a batch of n on a device where one token takes `one` and each further one `slope`.
double line(double one, double slope, int n) { return one * (1 + slope * (n - 1)); }

TEST(DecodeCost, StartsFromThePriorAndNothingMeasured) {
  DecodeCost c;
  EXPECT_FALSE(c.measured());
  EXPECT_EQ(c.one_ms(), 0);
  EXPECT_DOUBLE_EQ(c.slope(), DecodeCost::kPriorSlope);
  EXPECT_DOUBLE_EQ(c.Relative(1), 1.0);
  EXPECT_DOUBLE_EQ(c.Relative(5), 1 + 4 * DecodeCost::kPriorSlope);
  EXPECT_GE(c.since_one(), 1000);  // a plain decode is due first
}

TEST(DecodeCost, OneSizeTimedKeepsThePriorSlope) {
  DecodeCost c;
  c.Record(3, line(20, DecodeCost::kPriorSlope, 3), 2);
  EXPECT_FALSE(c.measured());
  EXPECT_DOUBLE_EQ(c.slope(), DecodeCost::kPriorSlope);
  EXPECT_NEAR(c.one_ms(), 20, 1e-9);  // one token's time follows from the prior
  EXPECT_GT(c.since_one(), 1000);  // still no plain decode
}

TEST(DecodeCost, TwoSizesGiveTheSlopeOfThisDevice) {
  for (double slope : {0.05, 0.3, 0.85, 1.4}) {
    DecodeCost c;
    c.Record(1, line(25, slope, 1), 2);
    c.Record(4, line(25, slope, 4), 2);
    EXPECT_TRUE(c.measured());
    EXPECT_NEAR(c.slope(), slope, 1e-9) << slope;
    EXPECT_NEAR(c.one_ms(), 25, 1e-9);
    EXPECT_NEAR(c.Relative(9), 1 + 8 * slope, 1e-9);  // past the largest timed: the line
  }
}

TEST(DecodeCost, FitsManySizesAndFollowsAChange) {
  DecodeCost c;
  for (int round = 0; round < 4; ++round) {
    for (int n : {1, 2, 3, 5, 9}) c.Record(n, line(30, 0.2, n), 2);
  }
  EXPECT_NEAR(c.slope(), 0.2, 1e-9);
  // The device got slower at batches (a thermal state, a busier core): the averages follow.
  for (int round = 0; round < 40; ++round) {
    for (int n : {1, 3}) c.Record(n, line(30, 0.7, n), 2);
  }
  EXPECT_NEAR(c.Relative(3), 1 + 2 * 0.7, 0.05);
}

TEST(DecodeCost, ReadsTimedSizesAsTheyAreNotAsALine) {
  // ggml's repacked kernels: four batch rows at a time, the rest one by one.
  const auto staircase = [](int n) { return 20.0 * (1.3 * (n / 4) + 0.95 * (n % 4)); };
  DecodeCost c;
  for (int n : {1, 2, 3, 4, 5, 8}) c.Record(n, staircase(n), 2);
  EXPECT_NEAR(c.Relative(4), staircase(4) / staircase(1), 1e-9);
  EXPECT_NEAR(c.Relative(3), staircase(3) / staircase(1), 1e-9);
  EXPECT_LT(c.Relative(4), c.Relative(3));  // a batch of 4 costs less than one of 3
  // Between timed sizes: read linearly between them.
  const double one = staircase(1);
  EXPECT_NEAR(c.Relative(6), (staircase(5) + (staircase(8) - staircase(5)) / 3) / one, 1e-9);
  // Past the largest: along the fitted line, never below the largest timed size's cost.
  EXPECT_GE(c.Relative(12), c.Relative(8));
  EXPECT_NEAR(c.Relative(12), (staircase(8) + c.slope() * c.one_ms() * 4) / one, 1e-9);
}

TEST(DecodeCost, CountsDecodesSinceAPlainOne) {
  DecodeCost c;
  c.Record(1, 10, 2);
  EXPECT_EQ(c.since_one(), 0);
  c.Record(3, 20, 2);
  c.Record(2, 15, 2);
  EXPECT_EQ(c.since_one(), 2);
  c.Record(1, 10, 2);
  EXPECT_EQ(c.since_one(), 0);
}

TEST(DecodeCost, OtherThreadsMeasureAgainFromTheLearnedSlope) {
  DecodeCost c;
  c.Record(1, line(20, 0.6, 1), 4);
  c.Record(3, line(20, 0.6, 3), 4);
  ASSERT_TRUE(c.measured());
  c.Record(1, 35, 2);  // the governor took two threads away
  EXPECT_FALSE(c.measured());
  EXPECT_NEAR(c.slope(), 0.6, 1e-9);  // kept as the prior
  EXPECT_NEAR(c.one_ms(), 35, 1e-9);  // the old times are gone
  c.Record(3, line(35, 0.3, 3), 2);
  EXPECT_TRUE(c.measured());
  EXPECT_NEAR(c.slope(), 0.3, 1e-9);
}

TEST(DecodeCost, IgnoresWhatCannotBeATiming) {
  DecodeCost c;
  c.Record(1, 10, 2);
  c.Record(2, 14, 2);
  const double slope = c.slope(), one = c.one_ms();
  c.Record(0, 5, 2);
  c.Record(-3, 5, 2);
  c.Record(1000, 5, 2);
  c.Record(2, 0, 2);
  c.Record(2, -1, 2);
  c.Record(2, std::numeric_limits<double>::quiet_NaN(), 2);
  c.Record(2, std::numeric_limits<double>::infinity(), 2);
  EXPECT_DOUBLE_EQ(c.slope(), slope);
  EXPECT_DOUBLE_EQ(c.one_ms(), one);
  // A batch cheaper than one token (timer noise) clamps the slope at 0, never below.
  DecodeCost d;
  d.Record(1, 20, 2);
  d.Record(5, 12, 2);
  EXPECT_GE(d.slope(), 0.0);
  EXPECT_GE(d.Relative(5), 1.0);
}

}  // namespace
}  // namespace edgellm::engine
