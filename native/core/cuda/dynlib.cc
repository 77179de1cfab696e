#include "core/cuda/dynlib.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"

namespace pygpukit::cuda {

absl::StatusOr<void*> OpenFirstLibrary(absl::string_view what,
                                       std::initializer_list<const char*> names) {
  std::string errors;
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = dlerror();
    absl::StrAppend(&errors, "\n  ", e ? e : n);
  }
  return NotImplementedError(
      absl::StrCat(what, ": library not found; tried ", absl::StrJoin(names, ", "), errors));
}

absl::StatusOr<void*> LookupSymbol(void* lib, absl::string_view what, const char* symbol) {
  void* p = dlsym(lib, symbol);
  if (p == nullptr) {
    return NotImplementedError(absl::StrCat(what, ": symbol ", symbol, " missing"));
  }
  return p;
}

}  // namespace pygpukit::cuda
