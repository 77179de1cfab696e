#include "core/dtype.h"

#include <gtest/gtest.h>

namespace pygpukit {
namespace {

TEST(DType, ItemSizes) {
  EXPECT_EQ(ItemSize(DType::Bool), 1);
  EXPECT_EQ(ItemSize(DType::BFloat16), 2);
  EXPECT_EQ(ItemSize(DType::Complex128), 16);
}

}  // namespace
}  // namespace pygpukit
