// The GPU's SM clock, power draw and clock-limit reasons, sampled through NVML (the driver's
// libnvidia-ml, loaded at run time like libcuda) while a benchmark phase runs. The co-location
// benchmark uses it to tell how much of a loop's slowdown beside a load is the chip lowering its
// clock to stay within its power limit, which no scheduling can avoid.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
      why_ = "libnvidia-ml.so.1 not found";
      return;
    }
    auto sym = [&](const char* name) { return dlsym(lib_, name); };
    auto init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
    auto count = reinterpret_cast<int (*)(unsigned*)>(sym("nvmlDeviceGetCount_v2"));
    auto handle = reinterpret_cast<int (*)(unsigned, void**)>(sym("nvmlDeviceGetHandleByIndex_v2"));
    clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
    power_ = reinterpret_cast<int (*)(void*, unsigned*)>(sym("nvmlDeviceGetPowerUsage"));
    reasons_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(
        sym("nvmlDeviceGetCurrentClocksEventReasons"));
    if (reasons_ == nullptr) {  // drivers before 535 name it "throttle"
      reasons_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(
          sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
    }
    unsigned n = 0;
    if (init == nullptr || count == nullptr || handle == nullptr || clock_ == nullptr ||
        power_ == nullptr || reasons_ == nullptr || init() != 0) {
      why_ = "NVML lacks an entry point or did not initialize";
    } else if (count(&n) != 0 || n != 1) {
      why_ = "not one GPU on this machine";
    } else if (handle(0, &dev_) != 0) {
      why_ = "no NVML handle for the GPU";
    }
    if (!why_.empty()) dev_ = nullptr;
  }
  ~ClockSampler() {
    Stop();
    auto shutdown = lib_ ? reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlShutdown")) : nullptr;
    if (dev_ != nullptr && shutdown != nullptr) shutdown();
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
  void* lib_ = nullptr;
  void* dev_ = nullptr;
  std::string why_;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*power_)(void*, unsigned*) = nullptr;
  int (*reasons_)(void*, unsigned long long*) = nullptr;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<unsigned> sm_mhz_, power_mw_;
  int capped_ = 0;
};

}  // namespace pygpukit::bench
