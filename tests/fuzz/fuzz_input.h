// Reads typed values off a fuzzer's byte string, front to back; zeros once it runs out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace pygpukit::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), left_(size) {}
  template <typename T>
  T Take() {
    T v{};
    const size_t n = left_ < sizeof(T) ? left_ : sizeof(T);
    if (n > 0) std::memcpy(&v, p_, n);
    p_ += n;
    left_ -= n;
    return v;
  }
  /// Up to `max` bytes (a length byte first).
  std::string Bytes(size_t max) {
    size_t n = Take<uint8_t>();
    if (n > max) n = max;
    if (n > left_) n = left_;
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    left_ -= n;
    return s;
  }
  /// Everything not read yet.
  std::string Rest() {
    std::string s(reinterpret_cast<const char*>(p_), left_);
    p_ += left_;
    left_ = 0;
    return s;
  }
  size_t left() const { return left_; }

 private:
  const uint8_t* p_;
  size_t left_;
};

}  // namespace pygpukit::fuzz
