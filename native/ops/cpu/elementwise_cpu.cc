// CPU implementations of the elementwise kernel families: the shared per-element bodies from
// ops/kernels/elementwise.h run in parallel chunks on the host thread pool, queued on the
// array's CPU stream through the dispatcher.
#include "absl/strings/str_cat.h"
#include "core/cpu/thread_pool.h"
#include "core/status.h"
#include "ops/kernel_launch.h"
#include "ops/kernels/elementwise.h"
#include "ops/kernels/gather.h"
#include "ops/kernels/search.h"
#include "runtime/runtime.h"

namespace pygpukit::ops::cpu_kernels {
namespace {

using kernels::ElementwiseParams;

constexpr int64_t kGrain = 1 << 15;  // elements per parallel chunk

// Queues `body(i)` for every element index on the stream.
template <typename Body>
absl::Status Enqueue(hal::Stream& s, absl::string_view kernel, int64_t n, KeepAlive keep,
                     Body body) {
  const int64_t held = HeldBytes(keep);
  return Runtime::Get().dispatcher().LaunchHost(
      s, kernel,
      [n, body, keep = std::move(keep)] {
        cpu::ParallelFor(n, kGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) body(i);
        });
      },
      {}, held);
}

template <typename Word>
void FillElement(const ElementwiseParams& p, int64_t i) {
  Word v;
  std::memcpy(&v, p.scalar, sizeof(Word));
  Word* out = static_cast<Word*>(p.out);
  if (p.contiguous) {
    out[i] = v;
  } else {
    out[kernels::OffsetOf(i, p.ndim, p.shape, p.out_strides)] = v;
  }
}

}  // namespace

absl::Status Copy(hal::Stream& s, DType src, DType dst, const ElementwiseParams& p,
                  KeepAlive keep) {
  return VisitDType(src, [&](auto st) {
    return VisitDType(dst, [&](auto dt) {
      using S = typename decltype(st)::type;
      using D = typename decltype(dt)::type;
      return Enqueue(s, "copy", p.n, std::move(keep),
                     [p](int64_t i) { kernels::CopyElement<S, D>(p, i); });
    });
  });
}

absl::Status Fill(hal::Stream& s, int itemsize, const ElementwiseParams& p, KeepAlive keep) {
  switch (itemsize) {
    case 1:
      return Enqueue(s, "fill", p.n, std::move(keep),
                     [p](int64_t i) { FillElement<uint8_t>(p, i); });
    case 2:
      return Enqueue(s, "fill", p.n, std::move(keep),
                     [p](int64_t i) { FillElement<uint16_t>(p, i); });
    case 4:
      return Enqueue(s, "fill", p.n, std::move(keep),
                     [p](int64_t i) { FillElement<uint32_t>(p, i); });
    case 8:
      return Enqueue(s, "fill", p.n, std::move(keep),
                     [p](int64_t i) { FillElement<uint64_t>(p, i); });
    case 16:
      return Enqueue(s, "fill", p.n, std::move(keep),
                     [p](int64_t i) { FillElement<complex128>(p, i); });
  }
  return RuntimeError(absl::StrCat("fill: unsupported item size ", itemsize));
}

absl::Status Arange(hal::Stream& s, DType dtype, const kernels::ArangeParams& p, KeepAlive keep) {
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (kernels::IsComplexT<T>::value || std::is_same_v<T, bool>) {
      return TypeError(absl::StrCat("arange: unsupported dtype ", DTypeName(dtype)));
    } else {
      return Enqueue(s, "arange", p.n, std::move(keep),
                     [p](int64_t i) { kernels::ArangeElement<T>(p, i); });
    }
  });
}

absl::Status Gather(hal::Stream& s, int itemsize, const kernels::GatherParams& p, bool scatter,
                    KeepAlive keep) {
  auto run = [&](auto word) {
    using Word = decltype(word);
    if (scatter) {
      return Enqueue(s, "scatter", p.n, std::move(keep),
                     [p](int64_t i) { kernels::ScatterElement<Word>(p, i); });
    }
    return Enqueue(s, "gather", p.n, std::move(keep),
                   [p](int64_t i) { kernels::GatherElement<Word>(p, i); });
  };
  switch (itemsize) {
    case 1:
      return run(uint8_t{});
    case 2:
      return run(uint16_t{});
    case 4:
      return run(uint32_t{});
    case 8:
      return run(uint64_t{});
    case 16:
      return run(complex128{});
  }
  return NotImplementedError(absl::StrCat("gather: no kernel for ", itemsize, "-byte elements"));
}

absl::Status SearchSorted(hal::Stream& s, DType dtype, const kernels::SearchParams& p,
                          KeepAlive keep) {
  return VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return Enqueue(s, "searchsorted", p.n, std::move(keep),
                   [p](int64_t i) { kernels::SearchElement<T>(p, i); });
  });
}

absl::Status Merge(hal::Stream& s, DType dtype, const kernels::MergeParams& p, KeepAlive keep) {
  return VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return Enqueue(s, "merge", p.total, std::move(keep),
                   [p](int64_t i) { kernels::MergeElement<T>(p, i); });
  });
}

}  // namespace pygpukit::ops::cpu_kernels
