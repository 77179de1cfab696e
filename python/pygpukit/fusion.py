"""gp.fuse: one kernel for a function of elementwise operations.

    @gp.fuse
    def gelu_tanh(x):
        return 0.5 * x * (1 + gp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

The function is traced once per number of arguments with symbolic values: operators and the
elementwise functions (gp.sin, gp.where, ..., however imported) record a node each. Each node
then gets exactly the dtypes the unfused call would (promotion, weak Python scalars, intermediates
kept in their result dtypes), so the fused result has the same bits as calling the operations one
by one, from one kernel (NVRTC on CUDA, the host C++ compiler on the CPU) with no intermediate
arrays. The function must return one value computed from its arguments; Python control flow on
values and arrays not passed as arguments are not traced; clip is not fusable.
"""

import functools

from . import _core

__all__ = ["fuse"]

_INPUT, _NODE, _CONST = 0, 1, 2
_SCALARS = (bool, int, float, complex)


class _Var:
    """A symbolic value while a fused function is traced."""

    __slots__ = ("_graph", "_ref")
    __hash__ = None

    def __init__(self, graph, ref):
        self._graph = graph
        self._ref = ref

    def _apply(self, name, *args):
        return self._graph.apply(name, args)

    def _pgk_fuse_apply(self, name, *args):
        # The elementwise functions (gp.sin, gp.where, ...) call this when an operand is traced.
        return self._graph.apply(name, args)


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
    ("pos", "positive"),
    ("abs", "abs"),
    ("invert", "bitwise_invert"),
]:
    setattr(_Var, f"__{_name}__", lambda self, _op=_op: self._apply(_op, self))


class _Graph:
    def __init__(self, name):
        self.name = name
        self.nodes = []

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

    def apply(self, name, args):
        self.nodes.append((name, [self.arg(a) for a in args]))
        return _Var(self, (_NODE, len(self.nodes) - 1))


def _trace(fn, nargs, name):
    graph = _Graph(name)
    result = fn(*[_Var(graph, (_INPUT, i)) for i in range(nargs)])
    if not isinstance(result, _Var) or result._graph is not graph:
        raise TypeError(
            f"{name}: a fused function must return one value computed from its arguments"
        )
    if result._ref[0] == _INPUT:
        return result._ref[1]  # the function returns an argument unchanged
    if result._ref[1] != len(graph.nodes) - 1:
        graph.nodes = graph.nodes[: result._ref[1] + 1]
    return _core._FusedExpr(nargs, graph.nodes, name)


def fuse(fn=None, *, name=None):
    """Decorator: runs `fn` (elementwise operations on its arguments) as one kernel."""
    if fn is None:
        return functools.partial(fuse, name=name)
    kernel_name = name or getattr(fn, "__name__", "fused")
    if not kernel_name.isidentifier():
        kernel_name = "fused"
    cache = {}

    @functools.wraps(fn)
    def wrapper(*args):
        expr = cache.get(len(args))
        if expr is None:
            expr = cache[len(args)] = _trace(fn, len(args), kernel_name)
        if isinstance(expr, int):
            return args[expr]
        return expr(*args)

    return wrapper
