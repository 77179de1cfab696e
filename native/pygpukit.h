// pygpukit C++ API: include this one header.
//
//   #include <pygpukit/pygpukit.h>
//   auto a = pygpukit::ops::Ones({512, 256}, pygpukit::DType::Float32, device).value();
//   auto c = pygpukit::ops::Matmul(a, b).value();
#pragma once

#include "core/device.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"
#include "ops/array.h"
#include "ops/gemm/gemm_tune.h"
#include "ops/interop/dlpack.h"
#include "ops/ops.h"
#include "ops/random/random.h"
#include "runtime/runtime.h"
#include "runtime/sched/scheduler.h"
#include "runtime/trace/profile.h"
