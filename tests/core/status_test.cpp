#include "core/status.hpp"

#include <gtest/gtest.h>

namespace fw {
namespace {

Result<int> half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}

Status quarter(int x, int& out) {
  FW_ASSIGN_OR_RETURN(int h, half(x));
  FW_ASSIGN_OR_RETURN(out, half(h));
  return Status::Ok();
}

TEST(Status, ExitCodes) {
  EXPECT_EQ(Status::Ok().exit_code(), 0);
  EXPECT_EQ(Status::InvalidArgument("x").exit_code(), 2);
  EXPECT_EQ(Status::NotFound("x").exit_code(), 2);
  EXPECT_EQ(Status::Unavailable("x").exit_code(), 1);
  EXPECT_EQ(Status::IoError("x").with_context("f").message(), "f: x");
}

TEST(Result, PropagatesErrors) {
  int out = 0;
  EXPECT_TRUE(quarter(8, out).ok());
  EXPECT_EQ(out, 2);
  Status s = quarter(6, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd");
}

}  // namespace
}  // namespace fw
