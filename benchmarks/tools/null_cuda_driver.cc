// A null CUDA driver, for counting the host instructions of the CUDA path on a machine with no
// GPU (benchmarks/host_instructions.py): it exports cuGetProcAddress_v2 like libcuda.so.1 and
// resolves the entry points core/cuda/driver_api.h asks for. Device memory is host memory, copies
// are memmove, kernels do nothing (results are wrong by design), one "device" of compute
// capability 9.0. Not part of the library; never on a real GPU machine's library path.
#include <cuda.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

namespace {
int dummy_ctx, dummy_lib, dummy_kernel, dummy_fn;
CUcontext current = nullptr;

CUresult fInit(unsigned) { return CUDA_SUCCESS; }
CUresult fDriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult fGetErrorName(CUresult, const char** s) {
  *s = "FAKE_ERROR";
  return CUDA_SUCCESS;
}
CUresult fGetErrorString(CUresult, const char** s) {
  *s = "fake";
  return CUDA_SUCCESS;
}
CUresult fDeviceGetCount(int* c) {
  *c = 1;
  return CUDA_SUCCESS;
}
CUresult fDeviceGet(CUdevice* d, int i) {
  *d = i;
  return CUDA_SUCCESS;
}
CUresult fDeviceGetName(char* n, int len, CUdevice) {
  strncpy(n, "Fake H100", len);
  return CUDA_SUCCESS;
}
CUresult fDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *v = 50 << 20;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *v = 227 * 1024;
      break;
    default:
      *v = 1;
  }
  return CUDA_SUCCESS;
}
CUresult fDeviceTotalMem(size_t* b, CUdevice) {
  *b = size_t(80) << 30;
  return CUDA_SUCCESS;
}
CUresult fPrimaryCtxRetain(CUcontext* c, CUdevice) {
  *c = (CUcontext)&dummy_ctx;
  return CUDA_SUCCESS;
}
CUresult fPrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult fCtxSetCurrent(CUcontext c) {
  current = c;
  return CUDA_SUCCESS;
}
CUresult fCtxGetCurrent(CUcontext* c) {
  *c = current;
  return CUDA_SUCCESS;
}
CUresult fCtxGetStreamPriorityRange(int* l, int* g) {
  *l = 0;
  *g = -5;
  return CUDA_SUCCESS;
}
CUresult fMemAlloc(CUdeviceptr* p, size_t n) {
  *p = (CUdeviceptr)aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  return CUDA_SUCCESS;
}
CUresult fMemFree(CUdeviceptr p) {
  free((void*)p);
  return CUDA_SUCCESS;
}
CUresult fMemHostAlloc(void** p, size_t n, unsigned) {
  *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  return CUDA_SUCCESS;
}
CUresult fMemFreeHost(void* p) {
  free(p);
  return CUDA_SUCCESS;
}
CUresult fMemGetInfo(size_t* f, size_t* t) {
  *f = *t = size_t(80) << 30;
  return CUDA_SUCCESS;
}
CUresult fPointerGetAttribute(void*, CUpointer_attribute, CUdeviceptr) {
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult fMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
  memmove((void*)d, (void*)s, n);
  return CUDA_SUCCESS;
}
CUresult fMemcpyHtoDAsync(CUdeviceptr d, const void* s, size_t n, CUstream) {
  memmove((void*)d, s, n);
  return CUDA_SUCCESS;
}
CUresult fMemcpyDtoHAsync(void* d, CUdeviceptr s, size_t n, CUstream) {
  memmove(d, (void*)s, n);
  return CUDA_SUCCESS;
}
CUresult fMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
  memmove((void*)d, (void*)s, n);
  return CUDA_SUCCESS;
}
CUresult fMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream) {
  memset((void*)d, v, n);
  return CUDA_SUCCESS;
}
CUresult fStreamCreateWithPriority(CUstream* s, unsigned, int) {
  *s = (CUstream)malloc(8);
  return CUDA_SUCCESS;
}
CUresult fStreamDestroy(CUstream s) {
  free(s);
  return CUDA_SUCCESS;
}
CUresult fStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult fStreamWaitEvent(CUstream, CUevent, unsigned) { return CUDA_SUCCESS; }
CUresult fEventCreate(CUevent* e, unsigned) {
  *e = (CUevent)malloc(8);
  return CUDA_SUCCESS;
}
CUresult fEventDestroy(CUevent e) {
  free(e);
  return CUDA_SUCCESS;
}
CUresult fEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult fEventQuery(CUevent) { return CUDA_SUCCESS; }
CUresult fEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult fEventElapsedTime(float* ms, CUevent, CUevent) {
  *ms = 0.001f;
  return CUDA_SUCCESS;
}
CUresult fLibraryLoadData(CUlibrary* l, const void*, CUjit_option*, void**, unsigned,
                          CUlibraryOption*, void**, unsigned) {
  *l = (CUlibrary)&dummy_lib;
  return CUDA_SUCCESS;
}
CUresult fLibraryUnload(CUlibrary) { return CUDA_SUCCESS; }
CUresult fLibraryGetKernel(CUkernel* k, CUlibrary, const char*) {
  *k = (CUkernel)&dummy_kernel;
  return CUDA_SUCCESS;
}
CUresult fKernelGetFunction(CUfunction* f, CUkernel) {
  *f = (CUfunction)&dummy_fn;
  return CUDA_SUCCESS;
}
CUresult fFuncSetAttribute(CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; }
CUresult fLaunchKernelEx(const CUlaunchConfig*, CUfunction, void**, void**) { return CUDA_SUCCESS; }
CUresult fOccupancy(int* b, CUfunction, int, size_t) {
  *b = 8;
  return CUDA_SUCCESS;
}
CUresult fTensorMapEncodeTiled(...) { return CUDA_SUCCESS; }

const std::unordered_map<std::string, void*>& Table() {
  static const auto* t = new std::unordered_map<std::string, void*>{
      {"cuInit", (void*)fInit},
      {"cuDriverGetVersion", (void*)fDriverGetVersion},
      {"cuGetErrorName", (void*)fGetErrorName},
      {"cuGetErrorString", (void*)fGetErrorString},
      {"cuDeviceGetCount", (void*)fDeviceGetCount},
      {"cuDeviceGet", (void*)fDeviceGet},
      {"cuDeviceGetName", (void*)fDeviceGetName},
      {"cuDeviceGetAttribute", (void*)fDeviceGetAttribute},
      {"cuDeviceTotalMem", (void*)fDeviceTotalMem},
      {"cuDevicePrimaryCtxRetain", (void*)fPrimaryCtxRetain},
      {"cuDevicePrimaryCtxRelease", (void*)fPrimaryCtxRelease},
      {"cuCtxSetCurrent", (void*)fCtxSetCurrent},
      {"cuCtxGetCurrent", (void*)fCtxGetCurrent},
      {"cuCtxGetStreamPriorityRange", (void*)fCtxGetStreamPriorityRange},
      {"cuMemAlloc", (void*)fMemAlloc},
      {"cuMemFree", (void*)fMemFree},
      {"cuMemHostAlloc", (void*)fMemHostAlloc},
      {"cuMemFreeHost", (void*)fMemFreeHost},
      {"cuMemGetInfo", (void*)fMemGetInfo},
      {"cuPointerGetAttribute", (void*)fPointerGetAttribute},
      {"cuMemcpyAsync", (void*)fMemcpyAsync},
      {"cuMemcpyHtoDAsync", (void*)fMemcpyHtoDAsync},
      {"cuMemcpyDtoHAsync", (void*)fMemcpyDtoHAsync},
      {"cuMemcpyDtoDAsync", (void*)fMemcpyDtoDAsync},
      {"cuMemsetD8Async", (void*)fMemsetD8Async},
      {"cuStreamCreateWithPriority", (void*)fStreamCreateWithPriority},
      {"cuStreamDestroy", (void*)fStreamDestroy},
      {"cuStreamSynchronize", (void*)fStreamSynchronize},
      {"cuStreamWaitEvent", (void*)fStreamWaitEvent},
      {"cuEventCreate", (void*)fEventCreate},
      {"cuEventDestroy", (void*)fEventDestroy},
      {"cuEventRecord", (void*)fEventRecord},
      {"cuEventQuery", (void*)fEventQuery},
      {"cuEventSynchronize", (void*)fEventSynchronize},
      {"cuEventElapsedTime", (void*)fEventElapsedTime},
      {"cuLibraryLoadData", (void*)fLibraryLoadData},
      {"cuLibraryUnload", (void*)fLibraryUnload},
      {"cuLibraryGetKernel", (void*)fLibraryGetKernel},
      {"cuKernelGetFunction", (void*)fKernelGetFunction},
      {"cuFuncSetAttribute", (void*)fFuncSetAttribute},
      {"cuLaunchKernelEx", (void*)fLaunchKernelEx},
      {"cuOccupancyMaxActiveBlocksPerMultiprocessor", (void*)fOccupancy},
      {"cuTensorMapEncodeTiled", (void*)fTensorMapEncodeTiled},
  };
  return *t;
}
}  // namespace

extern "C" CUresult cuGetProcAddress_v2(const char* name, void** fn, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult* q) {
  auto it = Table().find(name);
  if (q)
    *q = it == Table().end() ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND : CU_GET_PROC_ADDRESS_SUCCESS;
  if (it == Table().end()) {
    *fn = nullptr;
    return CUDA_ERROR_NOT_FOUND;
  }
  *fn = it->second;
  return CUDA_SUCCESS;
}
