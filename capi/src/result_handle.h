// The opaque pk_result of the C ABI: owns one engine Result.
#pragma once

#include <memory>

#include "profkit/profkit.h"
#include "trace/result.h"

struct pk_result {
  std::unique_ptr<profkit::Result> impl;
};
