"""gp.fuse: one kernel for a function of elementwise operations.

    @gp.fuse
    def gelu_tanh(x):
        return 0.5 * x * (1 + gp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

The function is traced once per pattern of array / scalar arguments with symbolic values:
operators and the elementwise functions (gp.sin, gp.where, ..., however imported) record a node
each; operations between Python scalars run in Python before the kernel, as they do unfused.
Each node then gets exactly the dtypes the unfused call would (promotion, weak Python scalars,
intermediates kept in their result dtypes), so the fused result has the same bits as calling the
operations one by one, from one kernel (NVRTC on CUDA, the host C++ compiler on the CPU) with no
intermediate arrays. The function returns an array computed from its arguments, or a tuple /
list of them (one kernel writes them all); Python control flow on values and arrays not passed
as arguments are not traced; clip is not fusable.
"""

import functools
import operator

from . import _core

__all__ = ["fuse"]

_INPUT, _NODE, _CONST = 0, 1, 2
# Python's operators, for operations whose operands are all Python scalars: unfused code computes
# them in Python (their results are weak scalars), so the fused call does too, before the kernel.
_PY_OPS = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "pow": operator.pow,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
    "bitwise_left_shift": operator.lshift,
    "bitwise_right_shift": operator.rshift,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "negative": operator.neg,
    "abs": operator.abs,
    "bitwise_invert": operator.invert,
}
_SCALARS = (bool, int, float, complex)


class _Var:
    """A symbolic value while a fused function is traced."""

    __slots__ = ("_graph", "_ref", "_scalar")
    __hash__ = None

    def __init__(self, graph, ref, scalar=False):
        self._graph = graph
        self._ref = ref
        self._scalar = scalar  # a Python scalar at run time (an argument or computed from them)

    def _apply(self, name, *args):
        return self._graph.apply(name, args, operator_call=True)

    def __bool__(self):
        raise TypeError(
            f"{self._graph.name}: the truth value of a traced value is unknown (Python control "
            "flow on values cannot be fused; use gp.where)"
        )

    def __pos__(self):
        return self

    def _unfusable(self, what):
        return TypeError(
            f"{self._graph.name}: {what} cannot be used in a fused function: its arguments are "
            "traced element by element, so only elementwise operations fuse (arithmetic, "
            "comparisons, gp.where and gp's elementwise functions); compute it outside gp.fuse"
        )

    def __getattr__(self, name):  # only for names a traced value does not have
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._unfusable(f"x.{name}")

    def __getitem__(self, key):
        raise self._unfusable("indexing (x[...])")

    def __setitem__(self, key, value):
        raise self._unfusable("item assignment (x[...] = v)")

    def __len__(self):
        raise self._unfusable("len(x)")

    def __iter__(self):
        raise self._unfusable("iteration over x")

    def _pgk_fuse_apply(self, name, *args):
        # The elementwise functions (gp.sin, gp.where, ...) call this when an operand is traced.
        return self._graph.apply(name, args, operator_call=False)


def _binary(name, reflected=False):
    if reflected:
        return lambda self, other: self._apply(name, other, self)
    return lambda self, other: self._apply(name, self, other)


for _name, _op in [
    ("add", "add"),
    ("sub", "subtract"),
    ("mul", "multiply"),
    ("truediv", "divide"),
    ("floordiv", "floor_divide"),
    ("mod", "remainder"),
    ("pow", "pow"),
    ("and", "bitwise_and"),
    ("or", "bitwise_or"),
    ("xor", "bitwise_xor"),
    ("lshift", "bitwise_left_shift"),
    ("rshift", "bitwise_right_shift"),
]:
    setattr(_Var, f"__{_name}__", _binary(_op))
    setattr(_Var, f"__r{_name}__", _binary(_op, reflected=True))
for _name, _op in [
    ("eq", "equal"),
    ("ne", "not_equal"),
    ("lt", "less"),
    ("le", "less_equal"),
    ("gt", "greater"),
    ("ge", "greater_equal"),
]:
    setattr(_Var, f"__{_name}__", _binary(_op))
for _name, _op in [
    ("neg", "negative"),
    ("abs", "abs"),
    ("invert", "bitwise_invert"),
]:
    setattr(_Var, f"__{_name}__", lambda self, _op=_op: self._apply(_op, self))


class _Graph:
    def __init__(self, name, nargs):
        self.name = name
        self.nargs = nargs
        self.nodes = []
        self.scalar_exprs = []  # (python operator, operand refs) computed before the kernel

    def arg(self, value):
        if isinstance(value, _Var):
            if value._graph is not self:
                raise ValueError(f"{self.name}: a value of another fused function")
            return value._ref
        if isinstance(value, _SCALARS):
            return (_CONST, value)
        raise TypeError(
            f"{self.name}: fused functions take their arrays as arguments (got "
            f"{type(value).__name__} inside the function)"
        )

    def apply(self, name, args, operator_call):
        refs = [self.arg(a) for a in args]
        if all(not isinstance(a, _Var) or a._scalar for a in args):
            if not operator_call or name not in _PY_OPS:
                raise ValueError(f"{name}: at least one operand must be an array")
            self.scalar_exprs.append((_PY_OPS[name], refs))
            # Derived scalars are kernel inputs after the arguments.
            return _Var(self, (_INPUT, self.nargs + len(self.scalar_exprs) - 1), scalar=True)
        self.nodes.append((name, refs))
        return _Var(self, (_NODE, len(self.nodes) - 1))


class _Traced:
    """A traced function for one pattern of array / scalar arguments."""

    def __init__(self, fn, scalars, name):
        nargs = len(scalars)
        graph = _Graph(name, nargs)
        result = fn(*[_Var(graph, (_INPUT, i), scalar=s) for i, s in enumerate(scalars)])
        # One value, or a tuple / list of them (returned as the same kind of sequence).
        self.sequence = type(result) if isinstance(result, (tuple, list)) else None
        values = list(result) if self.sequence is not None else [result]
        if not values:
            raise TypeError(f"{name}: a fused function must return at least one value")
        # Per result: ("arg", i) returns argument i unchanged (as unfused: the same object), or
        # ("out", j) the kernel's output j (one output per distinct node).
        self.results = []
        outputs = []
        for v in values:
            if not isinstance(v, _Var) or v._graph is not graph:
                raise TypeError(
                    f"{name}: a fused function must return values computed from its arguments "
                    f"(got {type(v).__name__})"
                )
            kind, index = v._ref
            if kind == _INPUT:
                if index >= nargs:
                    raise TypeError(f"{name}: a fused function must return arrays")
                self.results.append(("arg", index))
                continue
            if index not in outputs:
                outputs.append(index)
            self.results.append(("out", outputs.index(index)))
        self.scalar_exprs = graph.scalar_exprs
        self.expr = None
        if outputs:
            nodes = graph.nodes[: max(outputs) + 1]
            self.expr = _core._FusedExpr(nargs + len(self.scalar_exprs), nodes, outputs, name)

    def __call__(self, args):
        outs = ()
        if self.expr is not None:
            values = list(args)
            for op, refs in self.scalar_exprs:
                values.append(op(*[values[r[1]] if r[0] == _INPUT else r[1] for r in refs]))
            outs = self.expr(*values)
        results = [args[i] if kind == "arg" else outs[i] for kind, i in self.results]
        if self.sequence is None:
            return results[0]
        if hasattr(self.sequence, "_make"):  # a namedtuple
            return self.sequence._make(results)
        return self.sequence(results)


def fuse(fn=None, *, name=None):
    """Decorator: runs `fn` (elementwise operations on its arguments) as one kernel."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"fuse: name must be a str, got {type(name).__name__}")
    if fn is None:
        return functools.partial(fuse, name=name)
    if not callable(fn):
        raise TypeError(f"fuse: {type(fn).__name__} is not callable (decorate a function)")
    kernel_name = name or getattr(fn, "__name__", "fused")
    if not isinstance(kernel_name, str) or not kernel_name.isidentifier():
        kernel_name = "fused"
    cache = {}

    @functools.wraps(fn)
    def wrapper(*args):
        # One trace per pattern of Python-scalar arguments (operations between them run in
        # Python, as unfused).
        key = tuple(isinstance(a, _SCALARS) for a in args)
        traced = cache.get(key)
        if traced is None:
            traced = cache[key] = _Traced(fn, key, kernel_name)
        return traced(args)

    return wrapper
