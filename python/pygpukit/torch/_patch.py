"""Reversible patching of a torch model's layers with pygpukit's kernels.

Each patched module gets an instance attribute ``forward`` (the class's stays as it is) and a
record of what was there before; ``unpatch`` deletes or restores exactly that, so the module's
forward is again the original function object. A patched forward takes pygpukit's path when the
call's tensors allow it (``_bridge.usable``) and otherwise calls the original, call by call.
"""

import contextlib
import dataclasses
import threading
import warnings

import torch
import torch.nn.functional as F
from torch import nn

import pygpukit as gp

from ._bridge import DEVICE_TYPES, DTYPES, to_gp, to_torch, usable

OPS = ("linear", "norm", "attention", "activation")
_STATE = "_pygpukit_patch"  # per patched module: what its instance `forward` was before
_MISSING = object()
# Activation modules a Linear's epilogue takes: module type -> gp.linear's activation name (GELU
# by its `approximate`).
_EPILOGUE = {nn.ReLU: "relu", nn.SiLU: "silu", nn.GELU: None}


@dataclasses.dataclass
class PatchReport:
    """What ``patch`` did: module names patched per kind, (linear, activation) pairs fused into
    one GEMM epilogue, and (name, reason) for modules of a requested kind left as they were."""

    patched: dict = dataclasses.field(default_factory=dict)
    fused: list = dataclasses.field(default_factory=list)
    skipped: list = dataclasses.field(default_factory=list)

    def count(self):
        return sum(len(v) for v in self.patched.values())


def _install(module, forward, kind):
    if _STATE in module.__dict__:
        raise RuntimeError("already patched")
    before = module.__dict__.get("forward", _MISSING)
    object.__setattr__(module, _STATE, {"forward": before, "kind": kind})
    object.__setattr__(module, "forward", forward)


def _restore(module):
    state = module.__dict__.pop(_STATE, None)
    if state is None:
        return False
    if state["forward"] is _MISSING:
        del module.__dict__["forward"]
    else:
        object.__setattr__(module, "forward", state["forward"])
    return True


class _Weights:
    """pygpukit views of a module's parameters, made once and remade only when a parameter is
    replaced or its storage moves (never per call)."""

    def __init__(self, module, names):
        self._module, self._names, self._key, self._views = module, names, None, None

    def get(self):
        params = [getattr(self._module, n) for n in self._names]
        key = tuple(
            None if p is None else (id(p), p.data_ptr(), p.dtype, p.device, tuple(p.shape))
            for p in params
        )
        if key != self._key:
            self._views = [None if p is None else to_gp(p.detach()) for p in params]
            self._key = key
        return self._views


def _gelu_name(module):
    return "gelu_tanh" if module.approximate == "tanh" else "gelu"


def _linear_forward(module, act_module=None):
    original = module.forward
    act_original = None if act_module is None else act_module.forward
    activation = None
    if act_module is not None:
        activation = _EPILOGUE[type(act_module)] or _gelu_name(act_module)
    weights = _Weights(module, ("weight", "bias"))

    def forward(x):
        w, b = module.weight, module.bias
        if not usable(x, w, b) or x.dim() == 0 or x.shape[-1] != w.shape[1]:
            y = original(x)
            return y if act_original is None else act_original(y)
        gw, gb = weights.get()
        return to_torch(gp.linear(to_gp(x), gw, gb, activation=activation))

    return forward


def _layer_norm_forward(module):
    original = module.forward
    weights = _Weights(module, ("weight", "bias"))
    shape = tuple(module.normalized_shape)

    def forward(x):
        if not usable(x, module.weight, module.bias) or tuple(x.shape[-len(shape) :]) != shape:
            return original(x)
        gw, gb = weights.get()
        return to_torch(gp.nn.layer_norm(to_gp(x), shape, gw, gb, module.eps))

    return forward


def _rms_norm_forward(module):
    original = module.forward
    weights = _Weights(module, ("weight",))
    shape = tuple(module.normalized_shape)

    def forward(x):
        if not usable(x, module.weight) or tuple(x.shape[-len(shape) :]) != shape:
            return original(x)
        # eps None: pygpukit's default is torch's (float32's epsilon for 16-bit rows, whose
        # sums are float32).
        (gw,) = weights.get()
        return to_torch(gp.nn.rms_norm(to_gp(x), gw, module.eps, normalized_shape=shape))

    return forward


def _activation_forward(module):
    original = module.forward
    if isinstance(module, nn.GELU):
        approximate = module.approximate

        def run(x):
            return gp.nn.gelu(x, approximate)
    else:
        run = gp.nn.silu

    def forward(x):
        if not usable(x):
            return original(x)
        return to_torch(run(to_gp(x)))

    return forward


def _identity_forward(x):
    return x


# F.scaled_dot_product_attention while a patched model runs: swapped on torch.nn.functional
# for the duration of the model's forward (nested and concurrent forwards counted).
_sdpa_lock = threading.Lock()
_sdpa_depth = 0
_sdpa_original = None


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kw):
    enable_gqa = kw.pop("enable_gqa", False)
    fits = (
        not kw
        and dropout_p == 0.0
        and usable(query, key, value)
        and query.dim() >= 3
        and (
            attn_mask is None
            or usable(query, attn_mask)  # an additive mask of q's dtype, on its device
            or (
                isinstance(attn_mask, torch.Tensor)
                and attn_mask.dtype == torch.bool
                and attn_mask.device == query.device
            )
        )
        # torch aligns a causal mask at the top left when Sq != Sk, pygpukit at the bottom right
        and not (is_causal and (attn_mask is not None or query.shape[-2] != key.shape[-2]))
        and query.shape[-1] == key.shape[-1]
        and (query.shape[-3] == key.shape[-3] or enable_gqa)
    )
    if not fits:
        extra = {"enable_gqa": enable_gqa} if enable_gqa else {}
        return _sdpa_original(
            query,
            key,
            value,
            attn_mask=attn_mask,
            dropout_p=dropout_p,
            is_causal=is_causal,
            scale=scale,
            **extra,
            **kw,
        )
    mask = None if attn_mask is None else to_gp(attn_mask)
    out = gp.nn.scaled_dot_product_attention(
        to_gp(query), to_gp(key), to_gp(value), mask, 0.0, is_causal, scale, enable_gqa
    )
    return to_torch(out)


@contextlib.contextmanager
def _sdpa_swapped():
    global _sdpa_depth, _sdpa_original
    with _sdpa_lock:
        if _sdpa_depth == 0:
            _sdpa_original = F.scaled_dot_product_attention
            F.scaled_dot_product_attention = _sdpa
        _sdpa_depth += 1
    try:
        yield
    finally:
        with _sdpa_lock:
            _sdpa_depth -= 1
            if _sdpa_depth == 0:
                F.scaled_dot_product_attention = _sdpa_original


def _attention_forward(module):
    original = module.forward

    def forward(*args, **kwargs):
        with _sdpa_swapped():
            return original(*args, **kwargs)

    return forward


def _norm_kind(module):
    if isinstance(module, nn.LayerNorm):
        return _layer_norm_forward
    if hasattr(nn, "RMSNorm") and isinstance(module, nn.RMSNorm):
        return _rms_norm_forward
    return None


def patch(model, ops=OPS):
    """Patches ``model``'s layers of the kinds in ``ops`` (see ``OPS``) with pygpukit's kernels
    and returns a ``PatchReport``. ``linear``: ``nn.Linear``, fused with a following ReLU / GELU /
    SiLU module of an ``nn.Sequential`` (the activation module then passes its input through);
    ``norm``: ``nn.LayerNorm``, ``nn.RMSNorm``; ``activation``: ``nn.GELU``, ``nn.SiLU``;
    ``attention``: calls of ``F.scaled_dot_product_attention`` during ``model``'s forward.
    Modules of a requested kind whose parameters pygpukit does not take (dtype, device) are
    left as they are and listed in ``report.skipped`` (with a warning)."""
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        raise ValueError(f"patch: unknown ops {unknown} (expected some of {OPS})")
    if not isinstance(model, nn.Module):
        raise TypeError(f"patch: expected a torch.nn.Module, got {type(model).__name__}")
    report = PatchReport()
    names = {m: n or type(model).__name__ for n, m in model.named_modules()}
    done = set()

    def add(kind, module, forward):
        try:
            _install(module, forward, kind)
        except RuntimeError as e:
            report.skipped.append((names[module], str(e)))
            return False
        report.patched.setdefault(kind, []).append(names[module])
        done.add(module)
        return True

    def params_ok(module):
        p = next(module.parameters(recurse=False), None)
        if p is None or (p.dtype in DTYPES and p.device.type in DEVICE_TYPES):
            return True
        report.skipped.append((names[module], f"parameters of {p.dtype} on {p.device}"))
        return False

    if "linear" in ops:
        for seq in model.modules():
            if not isinstance(seq, nn.Sequential):
                continue
            children = list(seq.children())
            for lin, act in zip(children, children[1:]):  # noqa: RUF007 (pairwise: 3.10+)
                if (
                    type(lin) is nn.Linear
                    and type(act) in _EPILOGUE
                    and lin not in done
                    and act not in done
                    and params_ok(lin)
                    and add("linear", lin, _linear_forward(lin, act))
                ):
                    add("activation", act, _identity_forward)
                    report.fused.append((names[lin], names[act]))
    for module in list(model.modules()):
        if module in done:
            continue
        if "linear" in ops and type(module) is nn.Linear:
            if params_ok(module):
                add("linear", module, _linear_forward(module))
        elif "norm" in ops and _norm_kind(module) is not None:
            if params_ok(module):
                add("norm", module, _norm_kind(module)(module))
        elif "activation" in ops and type(module) in (nn.GELU, nn.SiLU):
            add("activation", module, _activation_forward(module))
    if "attention" in ops and model not in done:  # (a model that is itself a layer calls none)
        add("attention", model, _attention_forward(model))
    for name, reason in report.skipped:
        warnings.warn(f"pygpukit.torch.patch: left {name} as it is: {reason}", stacklevel=2)
    return report


def unpatch(model):
    """Restores every module of ``model`` that ``patch`` changed (its forward is again exactly
    what it was); returns how many."""
    return sum(_restore(m) for m in model.modules())


@contextlib.contextmanager
def patched(model, ops=OPS):
    """``patch`` for the duration of a ``with`` block (yields the report), then ``unpatch``."""
    report = patch(model, ops)
    try:
        yield report
    finally:
        unpatch(model)
