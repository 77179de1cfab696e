// The GPU's SM clock, power draw and clock-limit reasons, sampled through NVML (the driver's
// libnvidia-ml, loaded at run time like libcuda, through core/cuda/dynlib.h) while a benchmark
// phase runs. The co-location benchmark uses it to tell how much of a loop's slowdown beside a load
// is the chip lowering its clock to stay within its power limit, which no scheduling can avoid.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "core/cuda/dynlib.h"
#include "core/status.h"

namespace pygpukit::bench {

/// What the samples of one phase showed.
struct ClockSummary {
  double sm_mhz_mean = 0;
  int sm_mhz_min = 0;
  double power_w_mean = 0;
  double power_capped_share = 0;  // samples whose clock was held down by the power limit
  int samples = 0;
};

/// Samples every `period` on its own thread between Start() and Stop(). Does nothing where NVML
/// cannot be loaded or the machine has several GPUs (NVML numbers them differently from CUDA's
/// visible devices, so the right one is not known): `available()` says which, `why()` why not.
class ClockSampler {
 public:
  explicit ClockSampler(std::chrono::milliseconds period = std::chrono::milliseconds(5))
      : period_(period) {
    if (absl::Status s = Load(); !s.ok()) {
      why_ = std::string(s.message());
      dev_ = nullptr;
    }
  }
  ~ClockSampler() {
    Stop();
    if (shutdown_ != nullptr) shutdown_();
    // The library stays loaded: NVML may keep threads of its own until the process ends.
  }
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;

  bool available() const { return dev_ != nullptr; }
  const std::string& why() const { return why_; }

  void Start() {
    if (!available()) return;
    Stop();
    {
      std::lock_guard<std::mutex> l(mu_);
      sm_mhz_.clear();
      power_mw_.clear();
      capped_ = 0;
    }
    stop_.store(false);
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        Sample();
        std::this_thread::sleep_for(period_);
      }
    });
  }

  /// The samples since Start(); nullopt where there are none.
  std::optional<ClockSummary> Stop() {
    if (thread_.joinable()) {
      stop_.store(true);
      thread_.join();
    }
    std::lock_guard<std::mutex> l(mu_);
    if (sm_mhz_.empty()) return std::nullopt;
    ClockSummary s;
    s.samples = static_cast<int>(sm_mhz_.size());
    double mhz = 0, mw = 0;
    for (unsigned v : sm_mhz_) mhz += v;
    for (unsigned v : power_mw_) mw += v;
    s.sm_mhz_mean = mhz / s.samples;
    s.sm_mhz_min = static_cast<int>(*std::min_element(sm_mhz_.begin(), sm_mhz_.end()));
    s.power_w_mean = power_mw_.empty() ? 0 : mw / 1e3 / double(power_mw_.size());
    s.power_capped_share = double(capped_) / s.samples;
    return s;
  }

 private:
  static constexpr int kSmClock = 1;                         // NVML_CLOCK_SM
  static constexpr unsigned long long kSwPowerCap = 0x4;     // nvmlClocksEventReasonSwPowerCap
  static constexpr unsigned long long kHwPowerBrake = 0x80;  // ...HwPowerBrakeSlowdown

  absl::Status Load() {
    constexpr const char* kWhat = "NVML";
    PGK_ASSIGN_OR_RETURN(void* lib, cuda::OpenFirstLibrary(kWhat, {"libnvidia-ml.so.1"}));
    int (*init)() = nullptr;
    int (*count)(unsigned*) = nullptr;
    int (*handle)(unsigned, void**) = nullptr;
    PGK_RETURN_IF_ERROR(cuda::Resolve(lib, kWhat, "nvmlInit_v2", init));
    PGK_RETURN_IF_ERROR(cuda::Resolve(lib, kWhat, "nvmlDeviceGetCount_v2", count));
    PGK_RETURN_IF_ERROR(cuda::Resolve(lib, kWhat, "nvmlDeviceGetHandleByIndex_v2", handle));
    PGK_RETURN_IF_ERROR(cuda::Resolve(lib, kWhat, "nvmlDeviceGetClockInfo", clock_));
    PGK_RETURN_IF_ERROR(cuda::Resolve(lib, kWhat, "nvmlDeviceGetPowerUsage", power_));
    if (!cuda::Resolve(lib, kWhat, "nvmlDeviceGetCurrentClocksEventReasons", reasons_).ok()) {
      // Drivers before 535 name it "throttle".
      PGK_RETURN_IF_ERROR(
          cuda::Resolve(lib, kWhat, "nvmlDeviceGetCurrentClocksThrottleReasons", reasons_));
    }
    if (init() != 0) return absl::UnavailableError("NVML did not initialize");
    PGK_RETURN_IF_ERROR(cuda::Resolve(lib, kWhat, "nvmlShutdown", shutdown_));
    unsigned n = 0;
    if (count(&n) != 0 || n != 1) return absl::UnavailableError("not one GPU on this machine");
    if (handle(0, &dev_) != 0) return absl::UnavailableError("no NVML handle for the GPU");
    return absl::OkStatus();
  }

  void Sample() {
    unsigned mhz = 0, mw = 0;
    unsigned long long why = 0;
    if (clock_(dev_, kSmClock, &mhz) != 0) return;
    const bool has_power = power_(dev_, &mw) == 0;
    const bool has_reasons = reasons_(dev_, &why) == 0;
    std::lock_guard<std::mutex> l(mu_);
    sm_mhz_.push_back(mhz);
    if (has_power) power_mw_.push_back(mw);
    if (has_reasons && (why & (kSwPowerCap | kHwPowerBrake)) != 0) ++capped_;
  }

  std::chrono::milliseconds period_;
  void* dev_ = nullptr;
  std::string why_;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*power_)(void*, unsigned*) = nullptr;
  int (*reasons_)(void*, unsigned long long*) = nullptr;
  int (*shutdown_)() = nullptr;  // set once NVML initialized
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<unsigned> sm_mhz_, power_mw_;
  int capped_ = 0;
};

}  // namespace pygpukit::bench
