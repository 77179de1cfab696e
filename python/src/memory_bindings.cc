// pygpukit._core._memory: the memory pool, quotas, spill, the pinned host pool and transfer
// statistics (wrapped by pygpukit/memory.py). Argument conversion and error mapping only.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"

namespace pygpukit::py {
namespace {

MemoryPool* PoolOf(const pyb::object& device, const char* op) {
  return Unwrap(Runtime::Get().pool(ToDevice(device, op)));
}

pyb::dict StatsDict(const MemoryStats& s) {
  pyb::dict out;
#define PGK_FIELD(name) out[#name] = s.name;
  PGK_FIELD(allocated_bytes)
  PGK_FIELD(requested_bytes)
  PGK_FIELD(reserved_bytes)
  PGK_FIELD(cached_bytes)
  PGK_FIELD(peak_allocated_bytes)
  PGK_FIELD(peak_reserved_bytes)
  PGK_FIELD(active_blocks)
  PGK_FIELD(segments)
  PGK_FIELD(largest_free_block)
  PGK_FIELD(limit_bytes)
  PGK_FIELD(num_allocations)
  PGK_FIELD(num_cache_hits)
  PGK_FIELD(num_driver_allocations)
  PGK_FIELD(num_driver_frees)
  PGK_FIELD(num_evictions)
  PGK_FIELD(num_spills)
  PGK_FIELD(num_page_ins)
  PGK_FIELD(spilled_bytes)
  PGK_FIELD(evictable_buffers)
#undef PGK_FIELD
  return out;
}

const std::shared_ptr<Buffer>& BufferOf(const pyb::handle& x, const char* op) {
  return AsArray(x, op).buffer();
}

// The pool of an array's buffer; ValueError for imported (foreign) memory, which no pool owns.
MemoryPool* PoolOf(const std::shared_ptr<Buffer>& b, const char* op) {
  if (b->foreign()) {
    RaiseStatus(ValueError(absl::StrCat(
        op,
        ": the array's memory was imported (DLPack / CUDA array interface) and is owned by "
        "its producer, not by the memory pool")));
  }
  return b->pool();
}

// Quota scopes opened from Python: a per-thread stack, so that `with` blocks nest. Each entry
// keeps the chain its scope made current, to tell whether a scope opened later (a task block)
// is still open inside it.
struct OpenQuota {
  std::shared_ptr<MemoryQuota> quota;
  std::unique_ptr<QuotaScope> scope;
  std::shared_ptr<const QuotaChain> chain;
};
thread_local std::vector<OpenQuota> quota_scopes;

// The pinned pool arrays from pinned_empty come from, and the transfer streams that may still
// copy into or out of them when they are freed.
struct PinnedOwner {
  PinnedPool* pool;
  std::vector<hal::Stream*> streams;
  void* ptr;
};

// Streams that may still copy into or out of a pinned block of `type`'s pool when it is freed.
std::vector<hal::Stream*> TransferStreams(DeviceType type) {
  Runtime& rt = Runtime::Get();
  std::vector<hal::Stream*> streams;
  for (Device d : rt.devices()) {
    if (d.type != type) continue;
    TransferEngine* e = Unwrap(rt.transfer(d));
    streams.push_back(&e->h2d_stream());
    streams.push_back(&e->d2h_stream());
  }
  return streams;
}

pyb::array PinnedEmpty(const pyb::object& shape, const pyb::object& dtype,
                       const pyb::object& device) {
  Shape s = ToShape(shape, "pinned_empty");
  DType dt = ToDType(dtype, "pinned_empty");
  Device d = ToDevice(device, "pinned_empty");
  return Unwrap(PinnedArray(s, dt, d.type, "pinned_empty"));
}

}  // namespace

absl::StatusOr<pyb::array> PinnedArray(const Shape& shape, DType dtype, DeviceType type,
                                       absl::string_view op) {
  PGK_RETURN_IF_ERROR(ValidateShape(shape, op));
  const __int128 bytes = static_cast<__int128>(NumElements(shape)) * ItemSize(dtype);
  if (bytes > INT64_MAX) return ValueError(absl::StrCat(op, ": array too large"));
  pyb::object npdt = NumpyDType(dtype);  // before allocating: it may raise (bfloat16)
  auto owner = std::make_unique<PinnedOwner>();
  PGK_ASSIGN_OR_RETURN(owner->pool, Runtime::Get().pinned_pool(type));
  owner->streams = TransferStreams(type);
  absl::StatusOr<void*> p =
      WithoutGil([&] { return owner->pool->Allocate(static_cast<size_t>(bytes)); });
  PGK_RETURN_IF_ERROR(p.status());
  owner->ptr = *p;
  void* data = owner->ptr;
  pyb::capsule base(owner.release(), [](void* o) {
    std::unique_ptr<PinnedOwner> own(static_cast<PinnedOwner*>(o));
    // Copies may still be in flight on the transfer streams: reuse waits for them.
    (void)own->pool->Free(own->ptr, own->streams);
  });
  std::vector<pyb::ssize_t> dims(shape.begin(), shape.end());
  return pyb::array(pyb::dtype::from_args(npdt), dims, data, base);
}

void BindMemory(pyb::module_& m) {
  pyb::module_ mem = m.def_submodule("_memory", "Memory pool internals (see pygpukit.memory).");
  mem.def(
      "stats", [](const pyb::object& d) { return StatsDict(PoolOf(d, "memory.stats")->stats()); },
      pyb::arg("device") = pyb::none());
  mem.def(
      "empty_cache",
      [](const pyb::object& d) {
        MemoryPool* pool = PoolOf(d, "memory.empty_cache");
        absl::Status s = WithoutGil([&] { return pool->EmptyCache(); });
        Check(s);
      },
      pyb::arg("device") = pyb::none());
  mem.def(
      "reset_peak_stats",
      [](const pyb::object& d) { PoolOf(d, "memory.reset_peak_stats")->ResetPeakStats(); },
      pyb::arg("device") = pyb::none());
  mem.def(
      "set_limit",
      [](int64_t bytes, const pyb::object& d) {
        MemoryPool* pool = PoolOf(d, "memory.set_limit");
        absl::Status s = WithoutGil([&] { return pool->SetLimit(bytes); });
        Check(s);
      },
      pyb::arg("bytes"), pyb::arg("device") = pyb::none());
  mem.def(
      "get_limit", [](const pyb::object& d) { return PoolOf(d, "memory.get_limit")->limit(); },
      pyb::arg("device") = pyb::none());
  mem.def(
      "set_policy",
      [](const std::string& policy, const pyb::object& d) {
        MemoryPool* pool = PoolOf(d, "memory.set_policy");
        if (policy == "fast") {
          pool->SetPolicy(PoolPolicy::kFast);
        } else if (policy == "compact") {
          pool->SetPolicy(PoolPolicy::kCompact);
        } else {
          throw pyb::value_error(absl::StrCat("memory.set_policy: unknown policy '", policy,
                                              "' (expected 'fast' or 'compact')"));
        }
      },
      pyb::arg("policy"), pyb::arg("device") = pyb::none());
  mem.def(
      "get_policy",
      [](const pyb::object& d) {
        return PoolOf(d, "memory.get_policy")->policy() == PoolPolicy::kCompact ? "compact"
                                                                                : "fast";
      },
      pyb::arg("device") = pyb::none());
  mem.def("parse_limit", [](const std::string& text, int64_t total) {
    return Unwrap(ParseMemoryLimit(text, total));
  });

  mem.def("set_evictable", [](const pyb::handle& x, bool flag) {
    const auto& b = BufferOf(x, "memory.set_evictable");
    MemoryPool* pool = PoolOf(b, "memory.set_evictable");
    absl::Status s = WithoutGil([&] { return pool->SetEvictable(*b, flag); });
    Check(s);
  });
  mem.def("is_evictable",
          [](const pyb::handle& x) { return BufferOf(x, "memory.is_evictable")->evictable(); });
  mem.def("is_resident",
          [](const pyb::handle& x) { return BufferOf(x, "memory.is_resident")->resident(); });
  mem.def("evict", [](const pyb::handle& x) {
    const auto& b = BufferOf(x, "memory.evict");
    MemoryPool* pool = PoolOf(b, "memory.evict");
    absl::Status s = WithoutGil([&] { return pool->Evict(*b); });
    Check(s);
  });

  pyb::class_<MemoryQuota, std::shared_ptr<MemoryQuota>>(mem, "Quota")
      .def(pyb::init([](const std::string& name, int64_t limit) {
             if (limit < 0) {
               throw pyb::value_error(absl::StrCat("Quota: negative limit ", limit));
             }
             return std::make_shared<MemoryQuota>(name, limit);
           }),
           pyb::arg("name"), pyb::arg("limit"))
      .def_property_readonly("name", &MemoryQuota::name)
      .def_property("limit", &MemoryQuota::limit,
                    [](MemoryQuota& q, int64_t v) {
                      if (v < 0) throw pyb::value_error(absl::StrCat("Quota: negative limit ", v));
                      q.set_limit(v);
                    })
      .def_property_readonly("used", &MemoryQuota::used)
      .def_property_readonly("peak", &MemoryQuota::peak);
  mem.def("push_quota", [](std::shared_ptr<MemoryQuota> q) {
    auto scope = std::make_unique<QuotaScope>(q);
    quota_scopes.push_back({std::move(q), std::move(scope), QuotaScope::CurrentChain()});
  });
  // Scopes end innermost first, on the thread that opened them, as Stream blocks do.
  mem.def("pop_quota", [](const std::shared_ptr<MemoryQuota>& q) {
    const auto open = std::find_if(quota_scopes.rbegin(), quota_scopes.rend(),
                                   [&](const OpenQuota& o) { return o.quota == q; });
    if (open == quota_scopes.rend()) {
      throw pyb::value_error(absl::StrCat("Quota '", q->name(),
                                          "': its block is not open on this thread (exited twice, "
                                          "or entered on another thread)"));
    }
    if (open != quota_scopes.rbegin()) {
      throw pyb::value_error(absl::StrCat("Quota '", q->name(),
                                          "': exited before the block of "
                                          "quota '",
                                          quota_scopes.back().quota->name(),
                                          "' opened inside it; blocks end innermost first"));
    }
    if (QuotaScope::CurrentChain() != open->chain) {
      throw pyb::value_error(absl::StrCat("Quota '", q->name(),
                                          "': exited while a scope opened inside it (a task "
                                          "block) is still open; blocks end innermost first"));
    }
    quota_scopes.pop_back();
  });

  mem.def("pinned_empty", &PinnedEmpty, pyb::arg("shape"), pyb::arg("dtype"),
          pyb::arg("device") = pyb::none());
  mem.def(
      "pinned_stats",
      [](const pyb::object& d) {
        PinnedStats s =
            Unwrap(Runtime::Get().pinned_pool(ToDevice(d, "memory.pinned_stats").type))->stats();
        pyb::dict out;
        out["allocated_bytes"] = s.allocated_bytes;
        out["reserved_bytes"] = s.reserved_bytes;
        out["peak_reserved_bytes"] = s.peak_reserved_bytes;
        out["limit_bytes"] = s.limit_bytes;
        out["num_allocations"] = s.num_allocations;
        out["num_cache_hits"] = s.num_cache_hits;
        out["num_driver_allocations"] = s.num_driver_allocations;
        out["num_driver_frees"] = s.num_driver_frees;
        return out;
      },
      pyb::arg("device") = pyb::none());
  mem.def(
      "set_pinned_limit",
      [](int64_t bytes, const pyb::object& d) {
        PinnedPool* p =
            Unwrap(Runtime::Get().pinned_pool(ToDevice(d, "memory.set_pinned_limit").type));
        absl::Status s = WithoutGil([&] { return p->SetLimit(bytes); });
        Check(s);
      },
      pyb::arg("bytes"), pyb::arg("device") = pyb::none());
  mem.def(
      "transfer_stats",
      [](const pyb::object& d) {
        TransferStats s =
            Unwrap(Runtime::Get().transfer(ToDevice(d, "memory.transfer_stats")))->stats();
        pyb::dict out;
        out["h2d_bytes"] = s.h2d_bytes;
        out["d2h_bytes"] = s.d2h_bytes;
        out["staged_chunks"] = s.staged_chunks;
        out["direct_copies"] = s.direct_copies;
        return out;
      },
      pyb::arg("device") = pyb::none());
}

}  // namespace pygpukit::py
