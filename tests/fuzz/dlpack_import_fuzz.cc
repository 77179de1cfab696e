// Fuzz target: DLPack import (ops/interop/dlpack.h) on the CPU backend. A capsule's tensor is the
// producer's word: whatever its ndim, shape, strides, byte_offset, dtype and device say, the
// import either refuses with an error (leaving the tensor to its producer) or makes a view
// whose recorded span covers exactly its elements (a copy through the strides stays inside it;
// AddressSanitizer builds check that), and the producer's deleter runs once, after the view.
//   Input: the DLTensor's fields; the data pointer points into a 4 KiB buffer (or is null, or
//   made up, by the first byte).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "fuzz_input.h"
#include "ops/interop/dlpack.h"
#include "pygpukit.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

alignas(64) unsigned char g_buffer[4096];
std::atomic<int> g_deleted{0};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pygpukit;
  pygpukit::fuzz::Input in(data, size);
  const uint8_t pointer = in.Take<uint8_t>();
  // On the heap: the deleter may run on a runtime thread after this call returns.
  auto* owned = new DLManagedTensorVersioned{};
  DLManagedTensorVersioned& t = *owned;
  t.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  t.deleter = [](DLManagedTensorVersioned* self) {
    delete[] reinterpret_cast<int64_t*>(self->manager_ctx);
    delete self;
    g_deleted.fetch_add(1);
  };
  t.flags = in.Take<uint8_t>() & 1 ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  DLTensor& d = t.dl_tensor;
  const uint64_t offset_in_buffer = in.Take<uint16_t>() % sizeof(g_buffer);
  switch (pointer % 4) {
    case 0:
      d.data = nullptr;
      break;
    case 1:
      d.data = reinterpret_cast<void*>(in.Take<uint64_t>());  // made up
      break;
    default:
      d.data = g_buffer + offset_in_buffer;
  }
  // Any 32-bit value, as a C producer may write (stored without forming an invalid enum).
  const int32_t device_type = pointer & 4 ? int32_t{kDLCPU} : in.Take<uint8_t>();
  std::memcpy(&d.device.device_type, &device_type, sizeof(device_type));
  d.device.device_id = 0;
  d.ndim = static_cast<int32_t>(in.Take<int8_t>());
  d.dtype = {static_cast<uint8_t>(in.Take<uint8_t>() % 8),
             static_cast<uint8_t>(8 << (in.Take<uint8_t>() % 5)),
             static_cast<uint16_t>(in.Take<uint8_t>() & 1 ? 1 : in.Take<uint16_t>())};
  d.byte_offset = in.Take<uint8_t>() & 1 ? in.Take<uint64_t>() : in.Take<uint8_t>();
  const int dims = d.ndim < 0 ? 0 : d.ndim > 70 ? 70 : d.ndim;
  auto* fields = new int64_t[2 * static_cast<size_t>(dims) + 1];  // freed by the deleter
  t.manager_ctx = fields;
  int64_t* shape = fields;
  int64_t* strides = fields + dims;
  for (int i = 0; i < dims; ++i) {
    shape[i] = in.Take<uint8_t>() & 1 ? in.Take<int64_t>() : in.Take<uint8_t>() % 9;
  }
  for (int i = 0; i < dims; ++i) {
    strides[i] = in.Take<uint8_t>() & 1 ? in.Take<int64_t>() : in.Take<int8_t>();
  }
  const uint8_t layout = in.Take<uint8_t>();
  d.shape = layout & 1 ? nullptr : shape;
  d.strides = layout & 2 ? nullptr : strides;
  const int before = g_deleted.load();
  bool imported = false;
  {
    absl::StatusOr<GPUArray> a = ops::FromDLPack(&t, /*read_only_ok=*/true);
    imported = a.ok();
    if (a.ok() && a->size() > 0) {
      // The span recorded for the view. Where it lies in our buffer (the importer cannot know
      // the producer's allocation; a view past it is the producer's bug), a copy through the
      // view's strides must stay inside it.
      const auto lo = reinterpret_cast<uintptr_t>(a->buffer()->data());
      const uintptr_t hi = lo + a->buffer()->size();
      const auto start = reinterpret_cast<uintptr_t>(g_buffer);
      // (Zero strides give views of many elements over few bytes: only small ones are read.)
      if (lo >= start && hi <= start + sizeof(g_buffer) && a->nbytes() <= (1 << 20)) {
        std::vector<unsigned char> host(static_cast<size_t>(a->nbytes()));
        Check(ops::ToHost(*a, host.data()).ok());
      }
    }
  }
  if (!imported) {
    Check(g_deleted.load() == before);  // a refusal leaves the tensor to its producer
    t.deleter(&t);
  }
  // The view's release runs on a runtime thread once its streams are done: wait for it.
  for (int i = 0; g_deleted.load() == before && i < 10000; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  Check(g_deleted.load() == before + 1);
  return 0;
}
