// pygpukit._core._random: the Philox generator state and the random ops (wrapped by
// pygpukit/random.py). Argument conversion and error mapping only.
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "array_bindings.h"
#include "convert.h"
#include "ops/random/random.h"

namespace pygpukit::py {
namespace {

using Gen = std::shared_ptr<ops::PhiloxGenerator>;

pyb::object PyIndexOf(const pyb::handle& x) {
  pyb::object v = pyb::reinterpret_steal<pyb::object>(PyNumber_Index(x.ptr()));
  if (!v) throw pyb::error_already_set();
  return v;
}

// The 64-bit word `index` (0 = least significant) of a non-negative Python int.
uint64_t WordOf(const pyb::object& v, int index) {
  const pyb::object word = (v >> pyb::int_(64 * index)) & pyb::int_(~uint64_t{0});
  return PyLong_AsUnsignedLongLong(word.ptr());
}

// A Python int of n 64-bit words, least significant first.
pyb::int_ IntOfWords(const uint64_t* words, int n) {
  pyb::object v = pyb::int_(0);
  for (int w = n - 1; w >= 0; --w) v = (v << pyb::int_(64)) | pyb::int_(words[w]);
  return pyb::reinterpret_borrow<pyb::int_>(v);
}

// An integer in [0, 2^(64 * words)): TypeError for non-integers (bools included), ValueError
// outside the range.
pyb::object BoundedInt(const pyb::handle& x, int words, absl::string_view what,
                       absl::string_view op) {
  if (!IsInt(x)) {
    RaiseStatus(TypeError(absl::StrCat(op, ": ", what, " must be an integer, got ", TypeName(x))));
  }
  pyb::object v = PyIndexOf(x);
  const pyb::object limit = pyb::int_(1) << pyb::int_(64 * words);
  if (v < pyb::int_(0) || v >= limit) {
    RaiseStatus(ValueError(absl::StrCat(op, ": ", what, " must be in [0, 2**", 64 * words,
                                        "), got ", std::string(pyb::str(v)))));
  }
  return v;
}

Gen MakeGenerator(const pyb::handle& seed) {
  std::array<uint64_t, 2> key;
  if (seed.is_none()) {
    key = Unwrap(ops::EntropyKey());
  } else {
    const pyb::object v = BoundedInt(seed, 2, "seed", "Generator");
    key = {WordOf(v, 0), WordOf(v, 1)};
  }
  return std::make_shared<ops::PhiloxGenerator>(key[0], key[1]);
}

// An integer bound of `integers` as int128: values beyond it are out of every dtype's range.
absl::int128 BoundOf(const pyb::handle& x, absl::string_view what, DType dtype) {
  if (!IsInt(x)) {
    RaiseStatus(
        TypeError(absl::StrCat("integers: ", what, " must be an integer, got ", TypeName(x))));
  }
  pyb::object v = PyIndexOf(x);
  const pyb::object limit = pyb::int_(1) << pyb::int_(100);
  if (v >= limit || v <= -limit) {
    RaiseStatus(ValueError(absl::StrCat("integers: ", what, " ", std::string(pyb::str(v)),
                                        " is out of bounds for ", DTypeName(dtype))));
  }
  const pyb::object offset = v + limit;  // non-negative: two words
  const absl::uint128 u = absl::MakeUint128(WordOf(offset, 1), WordOf(offset, 0));
  return static_cast<absl::int128>(u) - (absl::int128(1) << 100);
}

Shape SizeOf(const pyb::handle& size, absl::string_view op) {
  return size.is_none() ? Shape{} : ToShape(size, op);
}

}  // namespace

void BindRandom(pyb::module_& m) {
  pyb::module_ r = m.def_submodule("_random", "Philox generators (see pygpukit.random).");
  pyb::class_<ops::PhiloxGenerator, Gen>(r, "Philox",
                                         "A Philox4x64-10 key and counter (NumPy's Philox state).")
      .def(pyb::init(&MakeGenerator), pyb::arg("seed") = pyb::none())
      .def_property_readonly("key",
                             [](const ops::PhiloxGenerator& g) {
                               const std::array<uint64_t, 2> k = g.key();
                               return IntOfWords(k.data(), 2);
                             })
      .def_property(
          "counter",
          [](const ops::PhiloxGenerator& g) {
            const std::array<uint64_t, 4> c = g.counter();
            return IntOfWords(c.data(), 4);
          },
          [](ops::PhiloxGenerator& g, const pyb::handle& value) {
            const pyb::object v = BoundedInt(value, 4, "counter", "Generator.counter");
            g.set_counter({WordOf(v, 0), WordOf(v, 1), WordOf(v, 2), WordOf(v, 3)});
          });
  r.def(
      "random_raw",
      [](ops::PhiloxGenerator& g, const pyb::handle& size, const pyb::handle& device) {
        return Unwrap(
            ops::RandomRaw(g, SizeOf(size, "random_raw"), ToDevice(device, "random_raw")));
      },
      pyb::arg("gen"), pyb::arg("size"), pyb::arg("device"));
  r.def(
      "random",
      [](ops::PhiloxGenerator& g, const pyb::handle& size, const pyb::handle& dtype,
         const pyb::handle& device) {
        return Unwrap(ops::Random(g, SizeOf(size, "random"), ToDType(dtype, "random"),
                                  ToDevice(device, "random")));
      },
      pyb::arg("gen"), pyb::arg("size"), pyb::arg("dtype"), pyb::arg("device"));
  r.def(
      "uniform",
      [](ops::PhiloxGenerator& g, const pyb::handle& low, const pyb::handle& high,
         const pyb::handle& size, const pyb::handle& dtype, const pyb::handle& device) {
        return Unwrap(ops::RandomUniform(
            g, SizeOf(size, "uniform"), ToDType(dtype, "uniform"), RealArg(low, "low", "uniform"),
            RealArg(high, "high", "uniform"), ToDevice(device, "uniform")));
      },
      pyb::arg("gen"), pyb::arg("low"), pyb::arg("high"), pyb::arg("size"), pyb::arg("dtype"),
      pyb::arg("device"));
  r.def(
      "normal",
      [](ops::PhiloxGenerator& g, const pyb::handle& loc, const pyb::handle& scale,
         const pyb::handle& size, const pyb::handle& dtype, const pyb::handle& device) {
        return Unwrap(ops::RandomNormal(
            g, SizeOf(size, "normal"), ToDType(dtype, "normal"), RealArg(loc, "loc", "normal"),
            RealArg(scale, "scale", "normal"), ToDevice(device, "normal")));
      },
      pyb::arg("gen"), pyb::arg("loc"), pyb::arg("scale"), pyb::arg("size"), pyb::arg("dtype"),
      pyb::arg("device"));
  r.def(
      "integers",
      [](ops::PhiloxGenerator& g, const pyb::handle& low, const pyb::handle& high,
         const pyb::handle& size, const pyb::handle& dtype, const pyb::handle& endpoint,
         const pyb::handle& device) {
        const DType dt = ToDType(dtype, "integers");
        // One bound: [0, low).
        const absl::int128 lo = high.is_none() ? absl::int128(0) : BoundOf(low, "low", dt);
        const absl::int128 hi = BoundOf(high.is_none() ? low : high, "high", dt);
        return Unwrap(ops::RandomIntegers(g, SizeOf(size, "integers"), dt, lo, hi,
                                          BoolArg(endpoint, "endpoint", "integers"),
                                          ToDevice(device, "integers")));
      },
      pyb::arg("gen"), pyb::arg("low"), pyb::arg("high"), pyb::arg("size"), pyb::arg("dtype"),
      pyb::arg("endpoint"), pyb::arg("device"));
  r.def(
      "permutation",
      [](ops::PhiloxGenerator& g, const pyb::handle& x, const pyb::handle& device) {
        if (!pyb::isinstance<GPUArray>(x) && IsInt(x)) {
          return Unwrap(ops::RandomPermutation(g, ToInt(x, "n", "permutation"),
                                               ToDevice(device, "permutation")));
        }
        return Unwrap(ops::RandomPermutation(g, AsArray(x, "permutation")));
      },
      pyb::arg("gen"), pyb::arg("x"), pyb::arg("device"));
}

}  // namespace pygpukit::py
