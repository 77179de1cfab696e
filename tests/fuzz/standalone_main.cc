// Runs a fuzz target without libFuzzer, for CI (any compiler): every seed file named on the
// command line (files, or folders of them), then --runs=N inputs made from the seeds by random
// edits (byte flips, interesting values, insertions, deletions, truncations, splices), from a
// fixed --seed so a failure repeats. Coverage-guided runs use scripts/fuzz.sh (clang libFuzzer).
//   <target> [--runs=N] [--seed=S] [--max_len=B] [seed files or folders...]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void Run(const std::string& s) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string Mutate(std::string s, const std::vector<std::string>& seeds, std::mt19937_64& rng,
                   size_t max_len) {
  static const uint8_t kInteresting[] = {0, 1, 0x7f, 0x80, 0xff, 0xfe, 0x40, 0x20, '\n', '\t'};
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 7) {
      case 0:  // flip a bit
        if (!s.empty()) s[at % s.size()] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // an interesting byte
        if (!s.empty()) s[at % s.size()] = static_cast<char>(kInteresting[rng() % 10]);
        break;
      case 2: {  // random bytes inserted
        std::string ins(rng() % 16, '\0');
        for (char& c : ins) c = static_cast<char>(rng());
        s.insert(at, ins);
        break;
      }
      case 3:  // a range deleted
        if (!s.empty()) s.erase(at % s.size(), rng() % 16);
        break;
      case 4:  // truncated
        s.resize(at);
        break;
      case 5: {  // a piece of another seed spliced in
        const std::string& o = seeds[rng() % seeds.size()];
        if (!o.empty()) {
          const size_t from = rng() % o.size();
          s.insert(at, o.substr(from, rng() % 64));
        }
        break;
      }
      default:  // a random 8-byte value (sizes, offsets, strides)
        if (s.size() >= 8) {
          const uint64_t v = rng() >> (rng() % 64);
          std::memcpy(&s[at % (s.size() - 7)], &v, 8);
        }
    }
  }
  if (s.size() > max_len) s.resize(max_len);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 10000;
  uint64_t seed = 1;
  size_t max_len = 4096;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--runs=", 0) == 0) {
      runs = std::strtol(a.c_str() + 7, nullptr, 10);
    } else if (a.rfind("--seed=", 0) == 0) {
      seed = std::strtoull(a.c_str() + 7, nullptr, 10);
    } else if (a.rfind("--max_len=", 0) == 0) {
      max_len = std::strtoull(a.c_str() + 10, nullptr, 10);
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::directory_iterator(a)) {
        if (e.is_regular_file()) seeds.push_back(ReadFile(e.path()));
      }
    } else {
      seeds.push_back(ReadFile(a));
    }
  }
  seeds.push_back("");
  for (const std::string& s : seeds) Run(s);
  std::mt19937_64 rng(seed);
  for (long i = 0; i < runs; ++i) {
    std::string s = Mutate(seeds[rng() % seeds.size()], seeds, rng, max_len);
    Run(s);
    if (rng() % 64 == 0 && seeds.size() < 256) seeds.push_back(std::move(s));  // grow the pool
  }
  std::printf("%s: %zu seeds and %ld random inputs, no failure\n", argv[0], seeds.size(), runs);
  return 0;
}
