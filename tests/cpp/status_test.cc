#include "core/status.h"

#include <gtest/gtest.h>

#include <string>

#include "core/device.h"

namespace pygpukit {
namespace {

TEST(Status, HelpersMapToTheirPythonExceptionTypes) {
  struct Case {
    absl::Status status;
    ErrorType type;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {ValueError("v"), ErrorType::kValue, absl::StatusCode::kInvalidArgument},
      {TypeError("t"), ErrorType::kType, absl::StatusCode::kInvalidArgument},
      {IndexError("i"), ErrorType::kIndex, absl::StatusCode::kOutOfRange},
      {MemoryError("m"), ErrorType::kMemory, absl::StatusCode::kResourceExhausted},
      {NotImplementedError("n"), ErrorType::kNotImplemented, absl::StatusCode::kUnimplemented},
      {RuntimeError("r"), ErrorType::kRuntime, absl::StatusCode::kInternal},
      {OverflowError("o"), ErrorType::kOverflow, absl::StatusCode::kOutOfRange},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok());
    EXPECT_EQ(ErrorTypeOf(c.status), c.type) << c.status;
    EXPECT_EQ(c.status.code(), c.code) << c.status;
  }
  EXPECT_EQ(TypeError("bad dtype int7").message(), "bad dtype int7");
}

TEST(Status, PlainAbslStatusesMapByCode) {
  EXPECT_EQ(ErrorTypeOf(absl::InvalidArgumentError("x")), ErrorType::kValue);
  EXPECT_EQ(ErrorTypeOf(absl::FailedPreconditionError("x")), ErrorType::kValue);
  EXPECT_EQ(ErrorTypeOf(absl::OutOfRangeError("x")), ErrorType::kIndex);
  EXPECT_EQ(ErrorTypeOf(absl::ResourceExhaustedError("x")), ErrorType::kMemory);
  EXPECT_EQ(ErrorTypeOf(absl::UnimplementedError("x")), ErrorType::kNotImplemented);
  EXPECT_EQ(ErrorTypeOf(absl::UnknownError("x")), ErrorType::kRuntime);
  EXPECT_EQ(ErrorTypeOf(absl::NotFoundError("x")), ErrorType::kRuntime);
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return ValueError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  PGK_ASSIGN_OR_RETURN(int h, Half(x));
  PGK_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

absl::Status CheckEven(int x) {
  PGK_RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(Status, PropagationMacros) {
  ASSERT_TRUE(Quarter(12).ok());
  EXPECT_EQ(*Quarter(12), 3);
  EXPECT_EQ(Quarter(6).status().message(), "odd");  // fails at the second step
  EXPECT_EQ(ErrorTypeOf(Quarter(5).status()), ErrorType::kValue);
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(3).ok());
}

TEST(Device, ParseAndFormat) {
  auto cpu = ParseDevice("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_TRUE(cpu->is_cpu());
  EXPECT_EQ(cpu->ToString(), "cpu");
  auto cuda = ParseDevice("cuda:1");
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_TRUE(cuda->is_cuda());
  EXPECT_EQ(cuda->index, 1);
  EXPECT_EQ(cuda->ToString(), "cuda:1");
  auto gpu = ParseDevice("gpu");
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(*gpu, (Device{DeviceType::kCUDA, 0}));
  for (const char* bad : {"tpu", "cuda:-1", "cuda:x", "cuda:1x"}) {
    auto d = ParseDevice(bad);
    if (d.ok()) {
      ADD_FAILURE() << "'" << bad << "' parsed as " << d->ToString();
      continue;
    }
    EXPECT_EQ(ErrorTypeOf(d.status()), ErrorType::kValue) << bad;
  }
}

}  // namespace
}  // namespace pygpukit
