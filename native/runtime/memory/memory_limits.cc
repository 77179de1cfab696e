// Quotas (MemoryQuota, the thread's QuotaScope) and the parsing and printing of byte sizes.
#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "runtime/memory/memory_pool.h"

namespace pygpukit {

// ---- quotas ----

bool MemoryQuota::TryCharge(int64_t bytes) {
  int64_t cur = used_.load(std::memory_order_relaxed);
  do {
    if (cur + bytes > limit()) return false;
  } while (!used_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed));
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (cur + bytes > peak &&
         !peak_.compare_exchange_weak(peak, cur + bytes, std::memory_order_relaxed)) {
  }
  return true;
}

bool QuotaChain::Contains(const MemoryQuota* q) const {
  for (const QuotaChain* c = this; c != nullptr; c = c->outer()) {
    if (c->quota_.get() == q) return true;
  }
  return false;
}

SpillOrder QuotaChain::spill_order() const {
  SpillOrder order = SpillOrder::kNormal;
  for (const QuotaChain* c = this; c != nullptr; c = c->outer()) {
    const SpillOrder o = c->quota_->spill_order();
    if (o == SpillOrder::kNever) return o;
    if (o == SpillOrder::kFirst) order = o;
  }
  return order;
}

MemoryQuota* QuotaChain::TryCharge(int64_t bytes) const {
  for (const QuotaChain* c = this; c != nullptr; c = c->outer()) {
    if (!c->quota_->TryCharge(bytes)) {
      for (const QuotaChain* d = this; d != c; d = d->outer()) d->quota_->Uncharge(bytes);
      return c->quota_.get();
    }
  }
  return nullptr;
}

void QuotaChain::Uncharge(int64_t bytes) const {
  for (const QuotaChain* c = this; c != nullptr; c = c->outer()) c->quota_->Uncharge(bytes);
}

namespace {
thread_local std::shared_ptr<const QuotaChain> current_chain;
}

QuotaScope::QuotaScope(std::shared_ptr<MemoryQuota> quota) : previous_(current_chain) {
  if (quota == nullptr) {
    current_chain = nullptr;
  } else if (current_chain == nullptr || !current_chain->Contains(quota.get())) {
    current_chain = std::make_shared<const QuotaChain>(std::move(quota), current_chain);
  }  // else: already charged by an enclosing scope, once is enough
}

QuotaScope::~QuotaScope() { current_chain = std::move(previous_); }

const std::shared_ptr<MemoryQuota>& QuotaScope::Current() {
  static const std::shared_ptr<MemoryQuota> none;
  return current_chain != nullptr ? current_chain->quota() : none;
}

const std::shared_ptr<const QuotaChain>& QuotaScope::CurrentChain() { return current_chain; }

std::string FormatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (std::abs(b) >= double(1 << 30)) return absl::StrFormat("%.2f GiB", b / (1 << 30));
  if (std::abs(b) >= double(1 << 20)) return absl::StrFormat("%.2f MiB", b / (1 << 20));
  if (std::abs(b) >= double(1 << 10)) return absl::StrFormat("%.2f KiB", b / (1 << 10));
  return absl::StrCat(bytes, " bytes");
}

absl::StatusOr<int64_t> ParseMemoryLimit(const std::string& text, int64_t total) {
  std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  auto bad = [&] {
    return ValueError(absl::StrCat("memory limit '", text,
                                   "': expected bytes (e.g. 8GiB, 512MB, 1e9), a fraction of "
                                   "device memory (0.8) or a percentage (80%)"));
  };
  if (t.empty()) return bad();
  double scale = 1;
  bool fraction = false;
  struct Suffix {
    const char* s;
    double scale;
  };
  static constexpr Suffix kSuffixes[] = {{"%", -1},
                                         {"kib", 1024.0},
                                         {"mib", 1048576.0},
                                         {"gib", 1073741824.0},
                                         {"tib", 1099511627776.0},
                                         {"kb", 1e3},
                                         {"mb", 1e6},
                                         {"gb", 1e9},
                                         {"tb", 1e12},
                                         {"k", 1024.0},
                                         {"m", 1048576.0},
                                         {"g", 1073741824.0},
                                         {"t", 1099511627776.0},
                                         {"b", 1.0}};
  for (const Suffix& s : kSuffixes) {
    if (absl::EndsWith(t, s.s)) {
      t = std::string(absl::StripAsciiWhitespace(t.substr(0, t.size() - std::strlen(s.s))));
      if (s.scale < 0) {
        fraction = true;
        scale = 0.01;
      } else {
        scale = s.scale;
      }
      break;
    }
  }
  double v = 0;
  if (!absl::SimpleAtod(t, &v) || !std::isfinite(v) || v < 0) return bad();
  if (!fraction && scale == 1 && t.find_first_of(".e") != std::string::npos && v <= 1) {
    fraction = true;  // "0.8": a fraction of the device
  }
  if (fraction) {
    v *= scale;
    if (v <= 0 || v > 1) return bad();
    return static_cast<int64_t>(v * static_cast<double>(total));
  }
  v *= scale;
  if (v < 1 || v > 9.2e18) return bad();
  return static_cast<int64_t>(v);
}

}  // namespace pygpukit
