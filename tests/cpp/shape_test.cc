#include "core/shape.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/status.h"

namespace pygpukit {
namespace {

bool Contains(const absl::Status& s, const std::string& needle) {
  return std::string(s.message()).find(needle) != std::string::npos;
}

TEST(Shape, NumElements) {
  EXPECT_EQ(NumElements({}), 1);
  EXPECT_EQ(NumElements({7}), 7);
  EXPECT_EQ(NumElements({2, 3, 4}), 24);
  EXPECT_EQ(NumElements({2, 0, 4}), 0);
  EXPECT_EQ(NumElements({1, 1, 1}), 1);
  EXPECT_EQ(NumElements({int64_t{1} << 31, 4}), int64_t{1} << 33);
}

TEST(Shape, ContiguousStrides) {
  EXPECT_EQ(ContiguousStrides({}), Strides{});
  EXPECT_EQ(ContiguousStrides({5}), (Strides{1}));
  EXPECT_EQ(ContiguousStrides({2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(ContiguousStrides({4, 1, 3}), (Strides{3, 3, 1}));
  // Zero extents count as 1 for the strides of outer dims (NumPy does the same).
  EXPECT_EQ(ContiguousStrides({2, 0, 3}), (Strides{3, 3, 1}));
  EXPECT_EQ(ContiguousStrides({0}), (Strides{1}));
}

TEST(Shape, IsContiguous) {
  EXPECT_TRUE(IsContiguous({}, {}));
  EXPECT_TRUE(IsContiguous({2, 3, 4}, {12, 4, 1}));
  EXPECT_FALSE(IsContiguous({2, 3, 4}, {1, 2, 6}));  // Fortran order
  EXPECT_FALSE(IsContiguous({3, 2}, {1, 3}));        // transposed
  EXPECT_FALSE(IsContiguous({2, 3}, {6, 2}));        // every other element
  EXPECT_FALSE(IsContiguous({2, 3}, {0, 1}));        // broadcast
  EXPECT_FALSE(IsContiguous({3}, {-1}));             // reversed
  EXPECT_FALSE(IsContiguous({2, 3}, {3, -1}));
  // Size-1 dims may have any stride.
  EXPECT_TRUE(IsContiguous({2, 1, 4}, {4, 999, 1}));
  EXPECT_TRUE(IsContiguous({1, 1}, {-5, 0}));
  EXPECT_TRUE(IsContiguous({3, 1}, {1, 7}));
  EXPECT_TRUE(IsContiguous({1, 5}, {0, 1}));
  EXPECT_TRUE(IsContiguous({1}, {-1}));
  // Arrays without elements are contiguous whatever their strides.
  EXPECT_TRUE(IsContiguous({2, 0, 3}, {7, 5, 2}));
  EXPECT_TRUE(IsContiguous({0}, {-3}));
  // Non-unit innermost stride is not contiguous, even for one dim.
  EXPECT_FALSE(IsContiguous({4}, {2}));
}

TEST(Shape, ShapeToString) {
  EXPECT_EQ(ShapeToString({}), "()");
  EXPECT_EQ(ShapeToString({5}), "(5,)");
  EXPECT_EQ(ShapeToString({2, 3}), "(2, 3)");
  EXPECT_EQ(ShapeToString({0, 1, 2}), "(0, 1, 2)");
}

TEST(Shape, ValidateShape) {
  EXPECT_TRUE(ValidateShape({}, "op").ok());
  EXPECT_TRUE(ValidateShape({2, 0, 3}, "op").ok());
  EXPECT_TRUE(ValidateShape(Shape(kMaxDims, 1), "op").ok());

  absl::Status neg = ValidateShape({2, -1}, "zeros");
  EXPECT_EQ(ErrorTypeOf(neg), ErrorType::kValue);
  EXPECT_TRUE(Contains(neg, "zeros")) << neg;
  EXPECT_TRUE(Contains(neg, "(2, -1)")) << neg;

  absl::Status rank = ValidateShape(Shape(kMaxDims + 1, 1), "reshape");
  EXPECT_EQ(ErrorTypeOf(rank), ErrorType::kValue);
  EXPECT_TRUE(Contains(rank, "reshape")) << rank;
  EXPECT_TRUE(Contains(rank, "65")) << rank;

  absl::Status big = ValidateShape({int64_t{1} << 40, int64_t{1} << 40}, "empty");
  EXPECT_EQ(ErrorTypeOf(big), ErrorType::kValue);
  EXPECT_TRUE(Contains(big, "empty")) << big;
  // The product would wrap around int64 to a small number: still rejected.
  absl::Status wrap = ValidateShape({int64_t{1} << 32, int64_t{1} << 32, 4}, "empty");
  EXPECT_FALSE(wrap.ok());
  absl::Status huge_dim = ValidateShape({std::numeric_limits<int64_t>::max(), 2}, "empty");
  EXPECT_FALSE(huge_dim.ok());
}

TEST(Shape, BroadcastShapes) {
  struct Case {
    Shape a, b, want;
  };
  const Case cases[] = {
      {{}, {}, {}},
      {{3}, {}, {3}},
      {{}, {2, 3}, {2, 3}},
      {{2, 3}, {3}, {2, 3}},
      {{2, 1}, {1, 3}, {2, 3}},
      {{5, 1, 4}, {3, 1}, {5, 3, 4}},
      {{1}, {0}, {0}},
      {{2, 0}, {1}, {2, 0}},
      {{8, 1, 6, 1}, {7, 1, 5}, {8, 7, 6, 5}},
      {{1, 1, 1}, {2}, {1, 1, 2}},
  };
  for (const Case& c : cases) {
    auto ab = BroadcastShapes(c.a, c.b, "add");
    ASSERT_TRUE(ab.ok()) << ShapeToString(c.a) << " " << ShapeToString(c.b) << ab.status();
    EXPECT_EQ(*ab, c.want) << ShapeToString(c.a) << " " << ShapeToString(c.b);
    auto ba = BroadcastShapes(c.b, c.a, "add");
    ASSERT_TRUE(ba.ok());
    EXPECT_EQ(*ba, c.want);
  }
}

TEST(Shape, BroadcastShapesErrorNamesOpAndShapes) {
  auto r = BroadcastShapes({2, 3}, {4}, "multiply");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorTypeOf(r.status()), ErrorType::kValue);
  EXPECT_TRUE(Contains(r.status(), "multiply")) << r.status();
  EXPECT_TRUE(Contains(r.status(), "(2, 3)")) << r.status();
  EXPECT_TRUE(Contains(r.status(), "(4,)")) << r.status();
  EXPECT_FALSE(BroadcastShapes({0}, {2}, "add").ok());
  EXPECT_FALSE(BroadcastShapes({3, 2}, {3, 1, 3}, "add").ok());
}

TEST(Shape, BroadcastShapesRandomized) {
  std::mt19937 rng(17);
  for (int iter = 0; iter < 2000; ++iter) {
    int nd = static_cast<int>(rng() % 6);
    Shape out(nd);
    for (auto& d : out) d = static_cast<int64_t>(rng() % 4);  // includes 0 and 1
    // Derive two operands: drop a random number of leading dims, set random dims to 1.
    auto derive = [&] {
      Shape s(out.begin() + static_cast<int>(rng() % (nd + 1)), out.end());
      for (auto& d : s) {
        if (rng() % 3 == 0) d = 1;
      }
      return s;
    };
    Shape a = derive(), b = derive();
    auto r = BroadcastShapes(a, b, "op");
    ASSERT_TRUE(r.ok()) << r.status();
    // Expected: elementwise max-with-1-rule from the right.
    size_t n = std::max(a.size(), b.size());
    Shape want(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
      int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
      want[i] = da == 1 ? db : da;
      ASSERT_TRUE(da == db || da == 1 || db == 1);
    }
    EXPECT_EQ(*r, want);
  }
}

TEST(Shape, BroadcastStrides) {
  auto s = BroadcastStrides({3, 1}, {1, 1}, {2, 3, 4}, "broadcast_to");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, (Strides{0, 1, 0}));

  auto same = BroadcastStrides({2, 3}, {-3, 2}, {2, 3}, "x");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, (Strides{-3, 2}));

  auto scalar = BroadcastStrides({}, {}, {4, 5}, "x");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(*scalar, (Strides{0, 0}));

  auto zero = BroadcastStrides({1}, {1}, {0}, "x");
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(*zero, (Strides{0}));

  auto longer = BroadcastStrides({2, 3}, {3, 1}, {3}, "broadcast_to");
  ASSERT_FALSE(longer.ok());
  EXPECT_EQ(ErrorTypeOf(longer.status()), ErrorType::kValue);
  EXPECT_TRUE(Contains(longer.status(), "broadcast_to")) << longer.status();
  EXPECT_TRUE(Contains(longer.status(), "(2, 3)")) << longer.status();
  EXPECT_TRUE(Contains(longer.status(), "(3,)")) << longer.status();

  auto mismatch = BroadcastStrides({3}, {1}, {2, 4}, "broadcast_to");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_TRUE(Contains(mismatch.status(), "(3,)")) << mismatch.status();
  EXPECT_TRUE(Contains(mismatch.status(), "(2, 4)")) << mismatch.status();
  // A dim of extent 2 cannot be broadcast to 1 (only 1 -> n).
  EXPECT_FALSE(BroadcastStrides({2}, {1}, {1}, "x").ok());
}

TEST(Shape, NormalizeAxis) {
  auto a = NormalizeAxis(-1, 3, "sum");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 2);
  EXPECT_EQ(*NormalizeAxis(0, 3, "sum"), 0);
  EXPECT_EQ(*NormalizeAxis(2, 3, "sum"), 2);
  EXPECT_EQ(*NormalizeAxis(-3, 3, "sum"), 0);
  for (int64_t bad : {int64_t{3}, int64_t{-4}, int64_t{1} << 40, -(int64_t{1} << 40)}) {
    auto r = NormalizeAxis(bad, 3, "permute_dims");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(ErrorTypeOf(r.status()), ErrorType::kIndex);
    EXPECT_TRUE(Contains(r.status(), "permute_dims")) << r.status();
    EXPECT_TRUE(Contains(r.status(), std::to_string(bad))) << r.status();
  }
  EXPECT_FALSE(NormalizeAxis(0, 0, "x").ok());
  EXPECT_FALSE(NormalizeAxis(-1, 0, "x").ok());
}

TEST(Shape, CoalesceExamples) {
  {  // contiguous: one dim
    Strides s = ContiguousStrides({2, 3, 4});
    CoalescedLayout c = Coalesce({2, 3, 4}, {absl::Span<const int64_t>(s)});
    EXPECT_EQ(c.shape, (Shape{24}));
    ASSERT_EQ(c.strides.size(), 1u);
    EXPECT_EQ(c.strides[0], (Strides{1}));
  }
  {  // a transposed operand prevents merging
    Strides out = {3, 1}, in = {1, 2};
    CoalescedLayout c = Coalesce({2, 3}, {absl::Span<const int64_t>(out), in});
    EXPECT_EQ(c.shape, (Shape{2, 3}));
    EXPECT_EQ(c.strides[0], (Strides{3, 1}));
    EXPECT_EQ(c.strides[1], (Strides{1, 2}));
  }
  {  // a row broadcast along the outer dim: stride 0 outer, 1 inner, no merge
    Strides out = {5, 1}, b = {0, 1};
    CoalescedLayout c = Coalesce({4, 5}, {absl::Span<const int64_t>(out), b});
    EXPECT_EQ(c.shape, (Shape{4, 5}));
    EXPECT_EQ(c.strides[1], (Strides{0, 1}));
  }
  {  // a fully broadcast scalar merges with anything contiguous
    Strides out = {20, 5, 1}, b = {0, 0, 0};
    CoalescedLayout c = Coalesce({3, 4, 5}, {absl::Span<const int64_t>(out), b});
    EXPECT_EQ(c.shape, (Shape{60}));
    EXPECT_EQ(c.strides[0], (Strides{1}));
    EXPECT_EQ(c.strides[1], (Strides{0}));
  }
  {  // broadcast along inner dims, contiguous outer: (3, 4, 5) with strides (1, 0, 0)
    Strides out = {20, 5, 1}, b = {1, 0, 0};
    CoalescedLayout c = Coalesce({3, 4, 5}, {absl::Span<const int64_t>(out), b});
    EXPECT_EQ(c.shape, (Shape{3, 20}));
    EXPECT_EQ(c.strides[1], (Strides{1, 0}));
  }
  {  // fully reversed array merges into one negative-stride dim
    Strides s = {-4, -1};
    CoalescedLayout c = Coalesce({3, 4}, {absl::Span<const int64_t>(s)});
    EXPECT_EQ(c.shape, (Shape{12}));
    EXPECT_EQ(c.strides[0], (Strides{-1}));
  }
  {  // reversed rows only: (-4, 1) cannot merge
    Strides s = {-4, 1};
    CoalescedLayout c = Coalesce({3, 4}, {absl::Span<const int64_t>(s)});
    EXPECT_EQ(c.shape, (Shape{3, 4}));
  }
  {  // size-1 dims are dropped whatever their stride
    Strides s = {99, 4, 7, 1};
    CoalescedLayout c = Coalesce({1, 3, 1, 4}, {absl::Span<const int64_t>(s)});
    EXPECT_EQ(c.shape, (Shape{12}));
    EXPECT_EQ(c.strides[0], (Strides{1}));
  }
  {  // all size-1: 0-d
    Strides s = {5, 3};
    CoalescedLayout c = Coalesce({1, 1}, {absl::Span<const int64_t>(s)});
    EXPECT_TRUE(c.shape.empty());
    EXPECT_TRUE(c.strides[0].empty());
  }
  {  // every other column of a (2, 7) array: strides (7, 2) over (2, 3) leave gaps, no merge
    Strides s = {7, 2};
    CoalescedLayout c = Coalesce({2, 3}, {absl::Span<const int64_t>(s)});
    EXPECT_EQ(c.shape, (Shape{2, 3}));
    // Every other column of a (2, 6) array: rows of 3 elements 2 apart, rows 6 apart, so the
    // elements are evenly spaced and the dims merge into one of stride 2.
    Strides t = {6, 2};
    CoalescedLayout d = Coalesce({2, 3}, {absl::Span<const int64_t>(t)});
    EXPECT_EQ(d.shape, (Shape{6}));
    EXPECT_EQ(d.strides[0], (Strides{2}));
  }
}

// Property: iterating the coalesced layout in C order visits exactly the same element offsets,
// in the same order, as iterating the original layout, for every operand.
TEST(Shape, CoalescePreservesIterationOrder) {
  std::mt19937 rng(23);
  for (int iter = 0; iter < 3000; ++iter) {
    int nd = static_cast<int>(rng() % 6);
    Shape shape(nd);
    for (auto& d : shape) d = 1 + static_cast<int64_t>(rng() % 4);
    int nops = 1 + static_cast<int>(rng() % 3);
    std::vector<Strides> strides(nops);
    for (int k = 0; k < nops; ++k) {
      // Start from contiguous strides of a possibly larger base, then permute / negate /
      // broadcast some dims.
      Shape base = shape;
      for (auto& d : base) d *= 1 + static_cast<int64_t>(rng() % 2);  // sliced with a step
      Strides s = ContiguousStrides(base);
      for (int d = 0; d < nd; ++d) s[d] *= base[d] / shape[d];
      if (nd > 1 && rng() % 3 == 0) std::swap(s[0], s[nd - 1]);
      for (int d = 0; d < nd; ++d) {
        if (rng() % 5 == 0) s[d] = -s[d];
        if (rng() % 5 == 0) s[d] = 0;
      }
      strides[k] = s;
    }
    std::vector<absl::Span<const int64_t>> spans(strides.begin(), strides.end());
    CoalescedLayout c = Coalesce(shape, spans);
    ASSERT_EQ(NumElements(c.shape), NumElements(shape));
    ASSERT_LE(c.shape.size(), shape.size());
    for (int64_t d : c.shape) ASSERT_GT(d, 1);
    int64_t n = NumElements(shape);
    for (int k = 0; k < nops; ++k) {
      ASSERT_EQ(c.strides[k].size(), c.shape.size());
      for (int64_t i = 0; i < n; ++i) {
        auto offset = [&](absl::Span<const int64_t> sh, absl::Span<const int64_t> st) {
          int64_t rem = i, off = 0;
          for (int d = static_cast<int>(sh.size()) - 1; d >= 0; --d) {
            off += (rem % sh[d]) * st[d];
            rem /= sh[d];
          }
          return off;
        };
        ASSERT_EQ(offset(shape, strides[k]), offset(c.shape, c.strides[k]))
            << "iter " << iter << " operand " << k << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace pygpukit
