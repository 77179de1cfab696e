// dlopen of the first library of a list of candidate names, with a readable error.
#pragma once

#include <initializer_list>
#include <mutex>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pygpukit::cuda {

/// Opens the first loadable library among `names`; the error lists what was tried.
absl::StatusOr<void*> OpenFirstLibrary(absl::string_view what,
                                       std::initializer_list<const char*> names);
/// Looks a symbol up; NotImplementedError naming the library when missing.
absl::StatusOr<void*> LookupSymbol(void* lib, absl::string_view what, const char* symbol);

/// Resolves `symbol` into a typed function pointer.
template <typename Fn>
absl::Status Resolve(void* lib, absl::string_view what, const char* symbol, Fn& fn) {
  auto p = LookupSymbol(lib, what, symbol);
  if (!p.ok()) return p.status();
  fn = reinterpret_cast<Fn>(*p);
  return absl::OkStatus();
}

/// A function table loaded at most once per process; the load error is remembered and returned
/// to every later caller.
template <typename T>
class LazyLibrary {
 public:
  template <typename Load>
  absl::StatusOr<const T*> Get(Load&& load) {
    std::call_once(once_, [&] {
      absl::StatusOr<const T*> r = load();
      if (r.ok()) {
        value_ = *r;
      } else {
        status_ = r.status();
      }
    });
    if (value_ == nullptr) return status_;
    return value_;
  }

 private:
  std::once_flag once_;
  const T* value_ = nullptr;
  absl::Status status_;
};

}  // namespace pygpukit::cuda
