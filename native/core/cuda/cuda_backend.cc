// Over 600 lines on purpose: every entry point shares the loaded driver table and the
// stream / event adaptors of this file's anonymous namespace, and drains the launch queue first.
#include "core/cuda/cuda_backend.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/driver_api.h"
#include "core/launch_queue.h"
#include "core/status.h"

namespace pygpukit::cuda {
namespace {

const DriverApi* api = nullptr;  // set once by Create()

class CudaStream final : public hal::Stream {
 public:
  CudaStream(int device, int priority, CUstream s, LaunchQueue* queue, int sms = 0)
      : device_(device), priority_(priority), sms_(sms), s_(s), queue_(queue) {}
  ~CudaStream() override {
    if (queue_ != nullptr) (void)queue_->Flush();  // no queued launch may outlive the stream
    if (s_ != nullptr) api->cuStreamDestroy(s_);
  }
  Device device() const override { return Device{DeviceType::kCUDA, device_}; }
  int priority() const override { return priority_; }
  // The handle goes to code that enqueues on it directly (cuBLASLt): it must follow the
  // launches queued so far. A queued launch's failure is reported by the next backend call.
  void* native_handle() const override {
    if (queue_ != nullptr) (void)queue_->Flush();
    return s_;
  }
  int sm_count() const override { return sms_; }
  CUstream get() const { return s_; }

 private:
  int device_, priority_, sms_;
  CUstream s_;
  LaunchQueue* queue_;  // the device's launch queue, or null
};

class CudaEvent final : public hal::Event {
 public:
  CudaEvent(int device, CUevent e) : device_(device), e_(e) {}
  ~CudaEvent() override {
    if (e_ != nullptr) api->cuEventDestroy(e_);
  }
  Device device() const override { return Device{DeviceType::kCUDA, device_}; }
  void* native_handle() const override { return e_; }
  CUevent get() const { return e_; }

 private:
  int device_;
  CUevent e_;
};

CUstream AsCu(hal::Stream& s) { return static_cast<CudaStream&>(s).get(); }

// How far callers may run ahead of the launcher thread, in launches.
constexpr size_t kLaunchQueueSlots = 128;

// Parameter layouts by function, read once from the driver (cuFuncGetParamInfo) and kept for
// the process (a CUfunction's parameters never change; our modules are never unloaded). Null:
// the function's launches are not queued (the driver cannot tell its layout, or it does not
// fit a slot).
const LaunchQueue::ParamLayout* LayoutOf(void* function) {
  struct Cached {
    void* function = nullptr;
    const LaunchQueue::ParamLayout* layout = nullptr;
  };
  thread_local std::array<Cached, 32> recent;
  Cached& c = recent[(reinterpret_cast<uintptr_t>(function) >> 4) % recent.size()];
  if (c.function == function) return c.layout;
  static std::mutex mu;
  static auto* layouts = new absl::node_hash_map<void*, LaunchQueue::ParamLayout>();
  static auto* refused = new absl::flat_hash_map<void*, bool>();
  std::lock_guard<std::mutex> l(mu);
  const LaunchQueue::ParamLayout* found = nullptr;
  if (auto it = layouts->find(function); it != layouts->end()) {
    found = &it->second;
  } else if (!refused->contains(function)) {
    LaunchQueue::ParamLayout p;
    bool fits = true;
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      const CUresult r =
          api->cuFuncGetParamInfo(static_cast<CUfunction>(function), i, &offset, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
      if (r != CUDA_SUCCESS) {
        fits = false;  // the driver cannot tell: launch directly
        break;
      }
      if (i >= LaunchQueue::kMaxParams || offset + size > LaunchQueue::kParamBytes) {
        fits = false;
        break;
      }
      p.offset[i] = static_cast<uint16_t>(offset);
      p.size[i] = static_cast<uint16_t>(size);
      p.count = static_cast<uint16_t>(i + 1);
    }
    if (fits) {
      found = &layouts->emplace(function, p).first->second;
    } else {
      refused->emplace(function, true);
    }
  }
  c = Cached{function, found};
  return found;
}

// cuLaunchKernelEx of `function` with `args` (pointers to its parameters) on `stream`.
CUresult LaunchEx(void* function, const hal::LaunchDims& d, CUstream stream, void** args) {
  CUlaunchConfig cfg{};
  cfg.gridDimX = d.grid[0];
  cfg.gridDimY = d.grid[1];
  cfg.gridDimZ = d.grid[2];
  cfg.blockDimX = d.block[0];
  cfg.blockDimY = d.block[1];
  cfg.blockDimZ = d.block[2];
  cfg.sharedMemBytes = d.shared_bytes;
  cfg.hStream = stream;
  CUlaunchAttribute attr[1];
  if (d.cluster[0] != 0) {
    attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr[0].value.clusterDim.x = d.cluster[0];
    attr[0].value.clusterDim.y = d.cluster[1];
    attr[0].value.clusterDim.z = d.cluster[2];
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  return api->cuLaunchKernelEx(&cfg, static_cast<CUfunction>(function), args, nullptr);
}

// Makes one queued launch (on the launcher thread).
absl::Status SubmitQueued(const LaunchQueue::Launch& l) {
  void* args[LaunchQueue::kMaxParams] = {};
  for (unsigned i = 0; i < l.layout->count; ++i) {
    args[i] = const_cast<unsigned char*>(l.params) + l.layout->offset[i];
  }
  const CUresult r = LaunchEx(l.function, l.dims, static_cast<CUstream>(l.stream), args);
  if (r == CUDA_SUCCESS) return absl::OkStatus();
  const hal::LaunchDims& d = l.dims;
  return DriverStatus(
      r, absl::StrCat("cuda: queued cuLaunchKernelEx (grid ", d.grid[0], "x", d.grid[1], "x",
                      d.grid[2], ", block ", d.block[0], "x", d.block[1], "x", d.block[2], ")"));
}
CUevent AsCu(hal::Event& e) { return static_cast<CudaEvent&>(e).get(); }

// Streams and events of another backend must never be cast to ours.
absl::Status CheckCuda(const Device& d, absl::string_view what) {
  if (!d.is_cuda())
    return ValueError(absl::StrCat("cuda ", what, ": object belongs to ", d.ToString()));
  return absl::OkStatus();
}

}  // namespace

// A green context holding a partition of a device's SMs; ctx null: the request covers the device.
struct GreenPartition {
  CUgreenCtx ctx = nullptr;
  int sms = 0;
};

struct CudaBackend::DeviceState {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  hal::DeviceProperties props;
  // Launches queued for the launcher thread; null when launches are made by their callers.
  std::unique_ptr<LaunchQueue> queue;
  // Green contexts by split (SM count; negative: the remainder of a split of that many), made
  // on first use. Never destroyed: their streams are pooled for the life of the runtime, and a
  // green context retains the primary context, which stays retained for the process anyway
  // (see ~CudaBackend).
  std::mutex partitions_mu;
  CUdevResource sm_resource{};  // the device's SMs, read on first use (type 0 until then)
  absl::flat_hash_map<int, GreenPartition> partitions;
};

CudaBackend::CudaBackend() = default;

CudaBackend::~CudaBackend() {
  // Primary contexts stay retained for the life of the process: releasing them during static
  // destruction races with other libraries (cuBLASLt, PyTorch) that share them.
}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create() {
  PGK_ASSIGN_OR_RETURN(api, LoadDriverApi());
  PGK_CU_RETURN_IF_ERROR(api->cuInit(0), "cuda: cuInit");
  int count = 0;
  PGK_CU_RETURN_IF_ERROR(api->cuDeviceGetCount(&count), "cuda: cuDeviceGetCount");
  if (count == 0) return NotImplementedError("cuda: the driver reports no CUDA devices");
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  int driver = 0;
  api->cuDriverGetVersion(&driver);
  for (int i = 0; i < count; ++i) {
    auto st = std::make_unique<DeviceState>();
    PGK_CU_RETURN_IF_ERROR(api->cuDeviceGet(&st->dev, i), "cuda: cuDeviceGet");
    PGK_CU_RETURN_IF_ERROR(api->cuDevicePrimaryCtxRetain(&st->ctx, st->dev),
                           "cuda: cuDevicePrimaryCtxRetain");
    char name[256] = {0};
    api->cuDeviceGetName(name, sizeof(name) - 1, st->dev);
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      api->cuDeviceGetAttribute(&v, a, st->dev);
      return v;
    };
    size_t total = 0;
    api->cuDeviceTotalMem(&total, st->dev);
    st->props.name = name;
    st->props.sm_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    st->props.sm_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    st->props.multiprocessors = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    st->props.l2_cache_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    st->props.max_shared_memory_per_block =
        attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    st->props.total_memory = static_cast<int64_t>(total);
    st->props.driver_version = driver;
    b->devices_.push_back(std::move(st));
  }
  // Launches go through a launcher thread per device unless PYGPUKIT_LAUNCH_QUEUE=0, or the
  // driver cannot tell kernels' parameter layouts (cuFuncGetParamInfo came in CUDA 12.4).
  const char* env = std::getenv("PYGPUKIT_LAUNCH_QUEUE");
  if (api->cuFuncGetParamInfo != nullptr && !(env != nullptr && std::string(env) == "0")) {
    for (int i = 0; i < count; ++i) {
      CudaBackend* self = b.get();
      b->devices_[i]->queue = std::make_unique<LaunchQueue>(
          kLaunchQueueSlots, &SubmitQueued, [self, i] { return self->MakeCurrent(i); });
    }
  }
  PGK_RETURN_IF_ERROR(b->MakeCurrent(0));
  int least = 0, greatest = 0;
  PGK_CU_RETURN_IF_ERROR(api->cuCtxGetStreamPriorityRange(&least, &greatest),
                         "cuda: cuCtxGetStreamPriorityRange");
  b->priority_range_ = {least, greatest};
  return b;
}

absl::Status CudaBackend::MakeCurrent(int device) {
  if (device < 0 || device >= device_count()) {
    return ValueError(absl::StrCat("cuda: no device ", device, " (", device_count(), " present)"));
  }
  // Asked every time rather than cached: other libraries on this thread (PyTorch, CuPy) may
  // have switched the current context since our last call.
  CUcontext want = devices_[device]->ctx, current = nullptr;
  api->cuCtxGetCurrent(&current);
  if (current != want) {
    PGK_CU_RETURN_IF_ERROR(api->cuCtxSetCurrent(want), "cuda: cuCtxSetCurrent");
  }
  return absl::OkStatus();
}

absl::StatusOr<hal::DeviceProperties> CudaBackend::properties(int device) const {
  if (device < 0 || device >= device_count()) {
    return ValueError(absl::StrCat("cuda: no device ", device));
  }
  return devices_[device]->props;
}

absl::StatusOr<void*> CudaBackend::RawAllocate(int device, size_t bytes) {
  PGK_RETURN_IF_ERROR(MakeCurrent(device));
  CUdeviceptr p = 0;
  CUresult r = api->cuMemAlloc(&p, std::max<size_t>(bytes, 1));
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    return MemoryError(
        absl::StrCat("cuda:", device, ": out of device memory allocating ", bytes, " bytes"));
  }
  PGK_CU_RETURN_IF_ERROR(r, "cuda: cuMemAlloc");
  return reinterpret_cast<void*>(p);
}

absl::Status CudaBackend::RawFree(int device, void* ptr) {
  const absl::Status queued = Drain(device);  // queued launches may still use the memory
  PGK_RETURN_IF_ERROR(MakeCurrent(device));
  PGK_CU_RETURN_IF_ERROR(api->cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuda: cuMemFree");
  return queued;
}

absl::StatusOr<void*> CudaBackend::RawAllocateHost(size_t bytes) {
  PGK_RETURN_IF_ERROR(MakeCurrent(0));
  void* p = nullptr;
  // Portable: the pages are pinned for every context, so any device's copies may use them.
  CUresult r = api->cuMemHostAlloc(&p, std::max<size_t>(bytes, 1), CU_MEMHOSTALLOC_PORTABLE);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    return MemoryError(
        absl::StrCat("cuda: out of pinned host memory allocating ", bytes, " bytes"));
  }
  PGK_CU_RETURN_IF_ERROR(r, "cuda: cuMemHostAlloc");
  return p;
}

absl::Status CudaBackend::RawFreeHost(void* ptr) {
  // Page-locked memory is mapped into every device: a queued kernel on any of them may read it.
  absl::Status queued = absl::OkStatus();
  for (int d = 0; d < device_count(); ++d) queued.Update(Drain(d));
  PGK_RETURN_IF_ERROR(MakeCurrent(0));
  PGK_CU_RETURN_IF_ERROR(api->cuMemFreeHost(ptr), "cuda: cuMemFreeHost");
  return queued;
}

absl::StatusOr<std::pair<size_t, size_t>> CudaBackend::MemoryInfo(int device) const {
  PGK_RETURN_IF_ERROR(const_cast<CudaBackend*>(this)->MakeCurrent(device));
  size_t free = 0, total = 0;
  PGK_CU_RETURN_IF_ERROR(api->cuMemGetInfo(&free, &total), "cuda: cuMemGetInfo");
  return std::pair<size_t, size_t>(free, total);
}

absl::StatusOr<std::unique_ptr<hal::Stream>> CudaBackend::CreateStream(int device, int priority) {
  PGK_RETURN_IF_ERROR(MakeCurrent(device));
  priority = std::clamp(priority, priority_range_.second, priority_range_.first);
  CUstream s = nullptr;
  PGK_CU_RETURN_IF_ERROR(api->cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, priority),
                         "cuda: cuStreamCreateWithPriority");
  return std::unique_ptr<hal::Stream>(
      new CudaStream(device, priority, s, devices_[device]->queue.get()));
}

absl::StatusOr<std::unique_ptr<hal::Stream>> CudaBackend::CreatePartitionedStream(int device,
                                                                                  int priority,
                                                                                  int sms) {
  PGK_RETURN_IF_ERROR(MakeCurrent(device));
  DeviceState& st = *devices_[device];
  const int all = st.props.multiprocessors;
  if (sms < 1 || sms > all) {
    return ValueError(absl::StrCat("stream: a partition of ", sms, " SMs is outside [1, ", all,
                                   "] (", st.props.name, ")"));
  }
  if (sms == all) return CreateStream(device, priority);
  if (api->cuDeviceGetDevResource == nullptr || api->cuDevSmResourceSplitByCount == nullptr ||
      api->cuDevResourceGenerateDesc == nullptr || api->cuGreenCtxCreate == nullptr ||
      api->cuGreenCtxStreamCreate == nullptr) {
    return NotImplementedError(
        "stream: SM partitions need CUDA green contexts, which this driver lacks (12.4 or newer)");
  }
  GreenPartition part;
  {
    std::lock_guard<std::mutex> l(st.partitions_mu);
    if (st.sm_resource.type != CU_DEV_RESOURCE_TYPE_SM) {
      PGK_CU_RETURN_IF_ERROR(
          api->cuDeviceGetDevResource(st.dev, &st.sm_resource, CU_DEV_RESOURCE_TYPE_SM),
          "cuda: cuDeviceGetDevResource");
    }
    CUdevResource whole = st.sm_resource;
    // The driver carves a group of N SMs from one end of the device, so two groups split
    // from it overlap. Partitions of more than half the device are such groups (multiples of
    // the co-scheduling alignment, 8 SMs on Hopper, and no smaller than the minimum); smaller
    // ones are the remainder of a split of the rest, from the other end. So a small and a large
    // partition that fit together are disjoint (a guaranteed tenant's beside a best-effort
    // one's); two small ones, or two large ones, overlap. One that rounds up to the whole
    // device is no partition.
    const int total = static_cast<int>(whole.sm.smCount);
    const int align = std::max<int>(1, whole.sm.smCoscheduledAlignment);
    const int min_group = std::max<int>(1, whole.sm.minSmPartitionSize);
    const int want = std::max(min_group, (sms + align - 1) / align * align);
    const int rest = (total - sms) / align * align;  // the split that leaves >= sms behind
    const bool from_end = 2 * sms <= total && rest >= min_group;
    const int count = from_end ? rest : want;
    if (from_end || want < total) {
      // Keyed by the split, so requests that round to one layout share one green context.
      const int key = from_end ? -count : count;
      auto it = st.partitions.find(key);
      if (it != st.partitions.end()) {
        part = it->second;
      } else {
        CUdevResource group{}, remaining{};
        unsigned groups = 1;
        PGK_CU_RETURN_IF_ERROR(
            api->cuDevSmResourceSplitByCount(&group, &groups, &whole, &remaining, 0, count),
            absl::StrCat("cuda: cuDevSmResourceSplitByCount(", count, " SMs)"));
        if (groups != 1) {
          return RuntimeError(absl::StrCat("cuda: splitting ", count, " of ", total, " SMs gave ",
                                           groups, " groups"));
        }
        CUdevResource& mine = from_end ? remaining : group;
        CUdevResourceDesc desc = nullptr;
        PGK_CU_RETURN_IF_ERROR(api->cuDevResourceGenerateDesc(&desc, &mine, 1),
                               "cuda: cuDevResourceGenerateDesc");
        PGK_CU_RETURN_IF_ERROR(
            api->cuGreenCtxCreate(&part.ctx, desc, st.dev, CU_GREEN_CTX_DEFAULT_STREAM),
            "cuda: cuGreenCtxCreate");
        part.sms = static_cast<int>(mine.sm.smCount);
        st.partitions.emplace(key, part);
      }
    }
  }
  if (part.ctx == nullptr) return CreateStream(device, priority);
  priority = std::clamp(priority, priority_range_.second, priority_range_.first);
  CUstream s = nullptr;
  // Kernels of our libraries (CUfunctions of the primary context) launch on green-context
  // streams as they are: a green context shares the primary context's modules and memory.
  PGK_CU_RETURN_IF_ERROR(
      api->cuGreenCtxStreamCreate(&s, part.ctx, CU_STREAM_NON_BLOCKING, priority),
      "cuda: cuGreenCtxStreamCreate");
  return std::unique_ptr<hal::Stream>(
      new CudaStream(device, priority, s, devices_[device]->queue.get(), part.sms));
}

absl::StatusOr<std::unique_ptr<hal::Event>> CudaBackend::CreateEvent(int device, bool timing) {
  PGK_RETURN_IF_ERROR(MakeCurrent(device));
  CUevent e = nullptr;
  PGK_CU_RETURN_IF_ERROR(
      api->cuEventCreate(&e, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
      "cuda: cuEventCreate");
  return std::unique_ptr<hal::Event>(new CudaEvent(device, e));
}

absl::Status CudaBackend::Record(hal::Event& event, hal::Stream& stream) {
  PGK_RETURN_IF_ERROR(CheckCuda(event.device(), "event record"));
  PGK_RETURN_IF_ERROR(CheckCuda(stream.device(), "event record"));
  const absl::Status queued = Drain(stream.device().index);
  PGK_RETURN_IF_ERROR(MakeCurrent(stream.device().index));
  PGK_CU_RETURN_IF_ERROR(api->cuEventRecord(AsCu(event), AsCu(stream)), "cuda: cuEventRecord");
  return queued;
}

absl::Status CudaBackend::Wait(hal::Stream& stream, hal::Event& event) {
  PGK_RETURN_IF_ERROR(CheckCuda(event.device(), "stream wait"));
  PGK_RETURN_IF_ERROR(CheckCuda(stream.device(), "stream wait"));
  const absl::Status queued = Drain(stream.device().index);
  PGK_RETURN_IF_ERROR(MakeCurrent(stream.device().index));
  PGK_CU_RETURN_IF_ERROR(api->cuStreamWaitEvent(AsCu(stream), AsCu(event), 0),
                         "cuda: cuStreamWaitEvent");
  return queued;
}

absl::StatusOr<bool> CudaBackend::Query(hal::Event& event) {
  PGK_RETURN_IF_ERROR(CheckCuda(event.device(), "event query"));
  PGK_RETURN_IF_ERROR(MakeCurrent(event.device().index));
  CUresult r = api->cuEventQuery(AsCu(event));
  if (r == CUDA_ERROR_NOT_READY) return false;
  PGK_CU_RETURN_IF_ERROR(r, "cuda: cuEventQuery");
  return true;
}

absl::Status CudaBackend::Synchronize(hal::Event& event) {
  PGK_RETURN_IF_ERROR(CheckCuda(event.device(), "event synchronize"));
  PGK_RETURN_IF_ERROR(MakeCurrent(event.device().index));
  PGK_CU_RETURN_IF_ERROR(api->cuEventSynchronize(AsCu(event)), "cuda: cuEventSynchronize");
  return absl::OkStatus();
}

absl::Status CudaBackend::Synchronize(hal::Stream& stream) {
  PGK_RETURN_IF_ERROR(CheckCuda(stream.device(), "stream synchronize"));
  const absl::Status queued = Drain(stream.device().index);
  PGK_RETURN_IF_ERROR(MakeCurrent(stream.device().index));
  PGK_CU_RETURN_IF_ERROR(api->cuStreamSynchronize(AsCu(stream)), "cuda: cuStreamSynchronize");
  return queued;
}

absl::StatusOr<float> CudaBackend::ElapsedMs(hal::Event& start, hal::Event& end) {
  PGK_RETURN_IF_ERROR(CheckCuda(start.device(), "event elapsed time"));
  PGK_RETURN_IF_ERROR(CheckCuda(end.device(), "event elapsed time"));
  PGK_RETURN_IF_ERROR(MakeCurrent(start.device().index));
  float ms = 0;
  PGK_CU_RETURN_IF_ERROR(api->cuEventElapsedTime(&ms, AsCu(start), AsCu(end)),
                         "cuda: cuEventElapsedTime");
  return ms;
}

absl::Status CudaBackend::CopyAsync(void* dst, const void* src, size_t bytes, hal::CopyKind kind,
                                    hal::Stream& stream) {
  PGK_RETURN_IF_ERROR(CheckCuda(stream.device(), "memcpy"));
  if (bytes == 0) return absl::OkStatus();
  const absl::Status queued = Drain(stream.device().index);
  PGK_RETURN_IF_ERROR(MakeCurrent(stream.device().index));
  CUstream s = AsCu(stream);
  CUresult r;
  switch (kind) {
    case hal::CopyKind::kHostToDevice:
      r = api->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, s);
      break;
    case hal::CopyKind::kDeviceToHost:
      r = api->cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), bytes, s);
      break;
    default:
      r = api->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                 reinterpret_cast<CUdeviceptr>(src), bytes, s);
  }
  PGK_CU_RETURN_IF_ERROR(r, "cuda: memcpy");
  return queued;
}

absl::Status CudaBackend::MemsetAsync(void* dst, uint8_t value, size_t bytes, hal::Stream& stream) {
  PGK_RETURN_IF_ERROR(CheckCuda(stream.device(), "memset"));
  if (bytes == 0) return absl::OkStatus();
  const absl::Status queued = Drain(stream.device().index);
  PGK_RETURN_IF_ERROR(MakeCurrent(stream.device().index));
  PGK_CU_RETURN_IF_ERROR(
      api->cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), value, bytes, AsCu(stream)),
      "cuda: cuMemsetD8Async");
  return queued;
}

absl::Status CudaBackend::WriteWordAsync(uint32_t* dst, uint32_t value, hal::Stream& stream) {
  PGK_RETURN_IF_ERROR(CheckCuda(stream.device(), "write word"));
  if (api->cuStreamWriteValue32 == nullptr) {
    return NotImplementedError("cuda: this driver has no stream memory operations");
  }
  const absl::Status queued = Drain(stream.device().index);
  PGK_RETURN_IF_ERROR(MakeCurrent(stream.device().index));
  PGK_CU_RETURN_IF_ERROR(api->cuStreamWriteValue32(AsCu(stream), reinterpret_cast<CUdeviceptr>(dst),
                                                   value, CU_STREAM_WRITE_VALUE_DEFAULT),
                         "cuda: cuStreamWriteValue32");
  return queued;
}

absl::StatusOr<void*> CudaBackend::LoadLibrary(const void* image) {
  PGK_RETURN_IF_ERROR(MakeCurrent(0));
  CUlibrary lib = nullptr;
  PGK_CU_RETURN_IF_ERROR(
      api->cuLibraryLoadData(&lib, image, nullptr, nullptr, 0, nullptr, nullptr, 0),
      "cuda: cuLibraryLoadData (embedded kernels; was the library built for this GPU's arch?)");
  return lib;
}

absl::StatusOr<void*> CudaBackend::GetFunction(void* library, const char* name, int device) {
  PGK_RETURN_IF_ERROR(MakeCurrent(device));
  CUkernel k = nullptr;
  CUresult r = api->cuLibraryGetKernel(&k, static_cast<CUlibrary>(library), name);
  if (r == CUDA_ERROR_NOT_FOUND) return absl::NotFoundError(name);
  PGK_CU_RETURN_IF_ERROR(r, absl::StrCat("cuda: cuLibraryGetKernel(", name, ")"));
  CUfunction f = nullptr;
  PGK_CU_RETURN_IF_ERROR(api->cuKernelGetFunction(&f, k),
                         absl::StrCat("cuda: cuKernelGetFunction(", name, ")"));
  return f;
}

absl::Status CudaBackend::SetMaxDynamicSharedMemory(void* function, int device, int bytes) {
  PGK_RETURN_IF_ERROR(MakeCurrent(device));
  PGK_CU_RETURN_IF_ERROR(
      api->cuFuncSetAttribute(static_cast<CUfunction>(function),
                              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
      "cuda: cuFuncSetAttribute");
  return absl::OkStatus();
}

absl::StatusOr<int> CudaBackend::ResidentBlocks(void* function, int device, int block,
                                                size_t shared_bytes) {
  PGK_RETURN_IF_ERROR(MakeCurrent(device));
  int blocks = 0;
  PGK_CU_RETURN_IF_ERROR(api->cuOccupancyMaxActiveBlocksPerMultiprocessor(
                             &blocks, static_cast<CUfunction>(function), block, shared_bytes),
                         "cuda: cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

absl::Status CudaBackend::Launch(void* function, const hal::LaunchDims& d, hal::Stream& stream,
                                 void** args, bool queued) {
  PGK_RETURN_IF_ERROR(CheckCuda(stream.device(), "launch"));
  LaunchQueue* q = devices_[stream.device().index]->queue.get();
  if (q != nullptr) {
    PGK_RETURN_IF_ERROR(q->status());
    const LaunchQueue::ParamLayout* layout = nullptr;
    // An asleep launcher would delay the launch by its wake-up: launch directly then.
    if (queued && q->accepting() && !q->LaunchDirectly() &&
        (layout = LayoutOf(function)) != nullptr) {
      uint64_t ticket = 0;
      if (LaunchQueue::Launch* l = q->Reserve(&ticket); l != nullptr) {
        l->function = function;
        l->stream = AsCu(stream);
        l->dims = d;
        l->layout = layout;
        for (unsigned i = 0; i < layout->count; ++i) {
          std::memcpy(l->params + layout->offset[i], args[i], layout->size[i]);
        }
        q->Commit(ticket);
        return absl::OkStatus();
      }
    }
    PGK_RETURN_IF_ERROR(q->Flush());  // a direct launch follows the queued ones
  }
  PGK_RETURN_IF_ERROR(MakeCurrent(stream.device().index));
  PGK_CU_RETURN_IF_ERROR(LaunchEx(function, d, AsCu(stream), args), "cuda: cuLaunchKernelEx");
  return absl::OkStatus();
}

absl::Status CudaBackend::Drain(int device) {
  if (device < 0 || device >= device_count()) return absl::OkStatus();
  LaunchQueue* q = devices_[device]->queue.get();
  return q == nullptr ? absl::OkStatus() : q->Flush();
}

uint64_t CudaBackend::QueuedLaunches(int device) const {
  if (device < 0 || device >= device_count()) return 0;
  const LaunchQueue* q = devices_[device]->queue.get();
  return q == nullptr ? 0 : q->launched();
}

absl::StatusOr<int> CudaBackend::PointerDevice(uintptr_t ptr) {
  PGK_RETURN_IF_ERROR(MakeCurrent(0));
  int ordinal = -1;
  const CUresult r = api->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                static_cast<CUdeviceptr>(ptr));
  if (r != CUDA_SUCCESS || ordinal < 0) {
    return absl::NotFoundError(
        absl::StrCat("cuda: 0x", absl::Hex(ptr), " is not memory of a CUDA device"));
  }
  return ordinal;
}

absl::StatusOr<uintptr_t> CudaBackend::ExternalHandle(hal::Stream& stream) {
  return reinterpret_cast<uintptr_t>(stream.native_handle());  // flushes the queue
}

namespace {

// Records an event at the tail of `from` and makes `to` wait for it; the event is destroyed at
// once (the driver keeps it until the wait has resolved).
absl::Status Chain(CUstream from, CUstream to) {
  CUevent ev = nullptr;
  PGK_CU_RETURN_IF_ERROR(api->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), "cuda: cuEventCreate");
  CUresult r = api->cuEventRecord(ev, from);
  if (r == CUDA_SUCCESS) r = api->cuStreamWaitEvent(to, ev, 0);
  api->cuEventDestroy(ev);
  PGK_CU_RETURN_IF_ERROR(r, "cuda: waiting on another library's stream");
  return absl::OkStatus();
}

}  // namespace

absl::Status CudaBackend::WaitForExternal(hal::Stream& waiter, uintptr_t external) {
  PGK_RETURN_IF_ERROR(CheckCuda(waiter.device(), "external stream wait"));
  const absl::Status queued = Drain(waiter.device().index);
  PGK_RETURN_IF_ERROR(MakeCurrent(waiter.device().index));
  PGK_RETURN_IF_ERROR(Chain(reinterpret_cast<CUstream>(external), AsCu(waiter)));
  return queued;
}

absl::Status CudaBackend::ExternalWaitsFor(uintptr_t external, hal::Stream& producer) {
  PGK_RETURN_IF_ERROR(CheckCuda(producer.device(), "external stream wait"));
  const absl::Status queued = Drain(producer.device().index);
  PGK_RETURN_IF_ERROR(MakeCurrent(producer.device().index));
  PGK_RETURN_IF_ERROR(Chain(AsCu(producer), reinterpret_cast<CUstream>(external)));
  return queued;
}

}  // namespace pygpukit::cuda
