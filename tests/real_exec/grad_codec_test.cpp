// The gradient codecs (core/grad_codec.hpp) against hand-derived values: the e4m3 grid and its
// rounding, int8 messages, top-k's tie rule and PowerSGD's linear algebra.
#include "strata/real/core/grad_codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace strata::real {
namespace {

TEST(Fp8E4m3, KnownCodesDecodeToTheirValues) {
  EXPECT_EQ(fp8_e4m3_decode(0x38), 1.0F);                  // exponent 7 = bias, mantissa 0
  EXPECT_EQ(fp8_e4m3_decode(0x7E), 448.0F);                // largest finite: 1.75 * 2^8
  EXPECT_EQ(fp8_e4m3_decode(0x01), std::ldexp(1.0F, -9));  // smallest subnormal
  EXPECT_EQ(fp8_e4m3_decode(0x08), std::ldexp(1.0F, -6));  // smallest normal
  EXPECT_EQ(fp8_e4m3_decode(0xB8), -1.0F);
  EXPECT_TRUE(std::isnan(fp8_e4m3_decode(0x7F)));
}

TEST(Fp8E4m3, EveryCodeEncodesBackToItself) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN
    const auto code = static_cast<std::uint8_t>(c);
    EXPECT_EQ(fp8_e4m3_encode(fp8_e4m3_decode(code)), code) << c;
  }
}

TEST(Fp8E4m3, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(fp8_e4m3_encode(1.0625F), 0x38);  // halfway 1 | 1.125: to the even mantissa 0
  EXPECT_EQ(fp8_e4m3_encode(1.1875F), 0x3A);  // halfway 1.125 | 1.25: to the even mantissa 2
  EXPECT_EQ(fp8_e4m3_encode(1.1F), 0x39);     // nearer 1.125
  EXPECT_EQ(fp8_e4m3_encode(1.97F), 0x40);    // rounds up into the next binade: 2.0
  EXPECT_EQ(fp8_e4m3_encode(1000.0F), 0x7E);  // saturates at 448
  EXPECT_EQ(fp8_e4m3_encode(-1000.0F), 0xFE);
  EXPECT_EQ(fp8_e4m3_encode(std::ldexp(1.5F, -9)), 0x02);  // subnormal tie 1.5 -> 2
}

TEST(ByteCodecMessage, Int8CarriesTheScaleThenOneByteCodes) {
  const std::vector<double> v = {-1.0, 0.5, 0.25, 0.0};
  std::vector<std::uint8_t> message;
  encode_message(v.data(), v.size(), ByteCodec::int8, message);
  ASSERT_EQ(message.size(), message_bytes(4));  // 4 + 4
  float scale = 0;
  std::memcpy(&scale, message.data(), 4);
  EXPECT_EQ(scale, 1.0F / 127.0F);
  EXPECT_EQ(static_cast<std::int8_t>(message[4]), -127);
  EXPECT_EQ(static_cast<std::int8_t>(message[5]), 64);  // 63.5: ties to even
  EXPECT_EQ(static_cast<std::int8_t>(message[6]), 32);  // 31.75
  EXPECT_EQ(static_cast<std::int8_t>(message[7]), 0);
  std::vector<double> back(4);
  decode_message(message.data(), 4, ByteCodec::int8, back.data());
  EXPECT_DOUBLE_EQ(back[0], -127.0 * static_cast<double>(scale));
  EXPECT_NEAR(back[1], 0.5, 0.5 / 127);
}

TEST(ByteCodecMessage, ZerosTravelWithScaleZero) {
  std::vector<float> v(5, 0.0F);
  round_trip(v.data(), v.size(), ByteCodec::fp8);
  for (float x : v) EXPECT_EQ(x, 0.0F);
}

TEST(ByteCodecMessage, Fp8KeepsThreeMantissaBitsOfEachValue) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(std::sin(i) * 10);
  std::vector<double> r = v;
  round_trip(r.data(), r.size(), ByteCodec::fp8);
  double max_abs = 0;
  for (double x : v) max_abs = std::max(max_abs, std::fabs(x));
  for (std::size_t i = 0; i < v.size(); ++i)  // relative error 2^-4 above the normal range
    EXPECT_LE(std::fabs(r[i] - v[i]), std::max(std::fabs(v[i]) / 16, max_abs / 448 * std::ldexp(1.0, -9)))
        << i;
}

TEST(TopK, PicksLargestMagnitudesAscendingAndSmallerIndexOnTies) {
  const std::vector<double> v = {0.1, -3.0, 2.0, -2.0, 0.5, 3.0};
  EXPECT_EQ(top_k_indices(v.data(), 6, 2), (std::vector<std::int64_t>{1, 5}));
  EXPECT_EQ(top_k_indices(v.data(), 6, 3), (std::vector<std::int64_t>{1, 2, 5}));  // |2| = |-2|: index 2
  EXPECT_EQ(top_k_indices(v.data(), 6, 6).size(), 6u);
}

TEST(PowerSgd, RankOneMatrixIsRecoveredExactlyByOneStep) {
  // M = u v^T, 4 x 3; P = M q, P̂ = P / |P| = u / |u|, Q = M^T P̂, P̂ Q^T = M.
  const std::vector<double> u = {1, -2, 0.5, 3}, w = {2, 1, -1};
  std::vector<double> m(12);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      m[static_cast<std::size_t>(i * 3 + j)] =
          u[static_cast<std::size_t>(i)] * w[static_cast<std::size_t>(j)];
  const std::vector<double> q0 = {0.3, -0.7, 1.1};
  std::vector<double> p(4), q(3), approx(12);
  CpuBackend backend;
  matmul_mq(backend, m.data(), q0.data(), 4, 3, 1, p.data());
  orthonormalize_columns(p.data(), 4, 1);
  matmul_mtp(backend, m.data(), p.data(), 4, 3, 1, q.data());
  matmul_pqt(backend, p.data(), q.data(), 4, 3, 1, approx.data());
  for (std::size_t i = 0; i < m.size(); ++i) EXPECT_NEAR(approx[i], m[i], 1e-12) << i;
}

TEST(PowerSgd, GramSchmidtLeavesOrthonormalColumns) {
  std::vector<double> p = {1, 2, 0, 1, 1, 0, 3, 1, 1, 0, 1, 4};  // 4 x 3, row-major
  orthonormalize_columns(p.data(), 4, 3);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      double dot = 0;
      for (int i = 0; i < 4; ++i)
        dot += p[static_cast<std::size_t>(i * 3 + a)] * p[static_cast<std::size_t>(i * 3 + b)];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-12) << a << "," << b;
    }
}

}  // namespace
}  // namespace strata::real
