// Tensor: shapes, factories, reshape, and the invariants it asserts.
#include "strata/real/core/tensor.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace strata::real {
namespace {

TEST(Tensor, FactoriesSetShapeAndValues) {
  const Tensor<float> z = Tensor<float>::zeros({2, 3, 4});
  EXPECT_EQ(z.size(), 24);
  EXPECT_EQ(z.rank(), 3);
  EXPECT_EQ(z.dim(2), 4);
  EXPECT_EQ(z.values(), std::vector<float>(24, 0.0f));
  const Tensor<double> f = Tensor<double>::filled({3}, 2.5);
  EXPECT_EQ(f.values(), (std::vector<double>{2.5, 2.5, 2.5}));
  EXPECT_EQ(Tensor<double>::zeros({}).size(), 1);  // a scalar
  EXPECT_EQ(Tensor<double>().size(), 0);
}

TEST(Tensor, ReshapeKeepsRowMajorValues) {
  Tensor<double> t(Shape{2, 3}, {0, 1, 2, 3, 4, 5});
  t.reshape({3, 2});
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t[3], 3.0);
  EXPECT_THROW(t.reshape({4, 2}), std::logic_error);
}

TEST(Tensor, RejectsInconsistentShapes) {
  EXPECT_THROW(Tensor<float>(Shape{2, 2}, {1, 2, 3}), std::logic_error);
  EXPECT_THROW(Tensor<float>::zeros({2, -1}), std::logic_error);
  const Tensor<float> t = Tensor<float>::zeros({2});
  EXPECT_THROW(static_cast<void>(t.dim(1)), std::logic_error);
}

}  // namespace
}  // namespace strata::real
