"""Neural-network ops: softmax and normalizations over rows, activations and the gated products
of GLU layers, rotary embeddings, attention (also over a paged KV cache), on the CPU backend and
CUDA devices (docs/nn.md).

    import pygpukit as gp
    import pygpukit.nn.functional as F        # the same functions (torch's spelling)

    p = gp.nn.softmax(scores, axis=-1)
    y = gp.nn.layer_norm(x, 4096, weight=w, bias=b)
    y, h = gp.nn.rms_norm(x, w, residual=h)   # h = x + h, y = rms_norm(h): the pre-norm step
    a = gp.nn.swiglu(gate_up)                 # silu(gate) * up of a fused [..., 2 * hidden]

Inputs are float16, bfloat16, float32 or float64; sums run in float32 (float64 for float64) and
results come back in the input's dtype. Row ops reduce the last dim(s); on CUDA a contiguous row
is read once (held on chip).
"""

import sys as _sys

from . import _core

_nn = _core._nn

__all__ = [
    "apply_rotary",
    "functional",
    "geglu",
    "gelu",
    "layer_norm",
    "log_softmax",
    "paged_attention",
    "paged_kv_append",
    "rms_norm",
    "rope_cache",
    "scaled_dot_product_attention",
    "silu",
    "softmax",
    "swiglu",
]


def _axis(axis, dim, op):
    """The reduced axis: ``axis`` or torch's ``dim``, the last one when neither is given (not
    torch's deprecated implicit dim, which depends on the rank)."""
    if dim is not None and axis is not None:
        raise TypeError(f"{op}: give axis or dim, not both")
    if dim is not None:
        return dim
    return -1 if axis is None else axis


def softmax(x, /, axis=None, *, dtype=None, dim=None):
    """exp(x) / sum(exp(x)) along ``axis`` (``dim`` is torch's name for it), computed stably
    (the row's maximum subtracted first). ``dtype`` casts x first. A row of only -inf gives NaN,
    as torch does; a NaN spreads over its row."""
    return _nn.softmax(x, _axis(axis, dim, "softmax"), False, dtype)


def log_softmax(x, /, axis=None, *, dtype=None, dim=None):
    """x - log(sum(exp(x))) along ``axis``, computed stably; see :func:`softmax`."""
    return _nn.softmax(x, _axis(axis, dim, "log_softmax"), True, dtype)


def _shape(s):
    return (s,) if isinstance(s, int) else tuple(s)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, *, residual=None):
    """(h - mean) / sqrt(var + eps) * weight + bias over the trailing dims ``normalized_shape``
    (an int or a tuple), with the biased variance, as ``torch.nn.functional.layer_norm``.

    With ``residual`` (x's shape and dtype), h = x + residual, rounded to the dtype, and the
    result is ``(y, h)``: the pre-norm transformer's step in one pass. Otherwise h = x and the
    result is y. weight and bias have shape normalized_shape and x's dtype."""
    return _nn.layer_norm(x, _shape(normalized_shape), weight, bias, eps, residual)


def rms_norm(x, weight=None, eps=None, *, normalized_shape=None, residual=None):
    """h / sqrt(mean(h**2) + eps) * weight over the trailing dims: ``normalized_shape``, else
    weight's shape, else the last dim. ``eps`` defaults to float32's machine epsilon (float64's
    for float64), as ``torch.nn.functional.rms_norm`` (note that torch takes normalized_shape
    second).

    With ``residual``, h = x + residual (rounded to the dtype) and the result is ``(y, h)``, as
    for :func:`layer_norm`."""
    if normalized_shape is None:
        normalized_shape = weight.shape if weight is not None else x.shape[-1:]
    return _nn.rms_norm(x, _shape(normalized_shape), weight, eps, residual)


def _gelu_fn(approximate, op, gated):
    if approximate == "none":
        return _core.gelu_mul if gated else _core.gelu
    if approximate == "tanh":
        return _core.gelu_tanh_mul if gated else _core.gelu_tanh
    raise ValueError(f"{op}: approximate must be 'none' or 'tanh', got {approximate!r}")


def gelu(x, /, approximate="none"):
    """GELU: x / 2 * (1 + erf(x / sqrt(2))), or with ``approximate="tanh"`` its tanh form, as
    ``torch.nn.functional.gelu``; computed in float32 for 16-bit floats (one rounding), the same
    formula as ``gp.linear(..., activation="gelu")``'s epilogue."""
    return _gelu_fn(approximate, "gelu", False)(x)


def silu(x, /):
    """SiLU (swish): x * sigmoid(x)."""
    return _core.silu(x)


def _halves(x, up, op):
    """(gate, up): the halves of x's last dim, or x and ``up`` when given."""
    if up is not None:
        return x, up
    n = x.shape[-1] if x.ndim else None
    if n is None or n % 2:
        raise ValueError(
            f"{op}: the last dim of a fused [..., 2 * hidden] input must be even, got shape "
            f"{tuple(x.shape)}"
        )
    return x[..., : n // 2], x[..., n // 2 :]


def swiglu(x, up=None, /):
    """SwiGLU's gated product silu(gate) * up in one pass (one rounding). With one argument,
    gate and up are the first and second halves of x's last dim (a fused gate-and-up
    projection's output, [..., 2 * hidden] -> [..., hidden]); with two, x is the gate (shapes
    broadcast)."""
    gate, up = _halves(x, up, "swiglu")
    return _core.silu_mul(gate, up)


def geglu(x, up=None, /, approximate="none"):
    """GeGLU's gated product gelu(gate) * up in one pass; see :func:`swiglu` and :func:`gelu`."""
    gate, up = _halves(x, up, "geglu")
    return _gelu_fn(approximate, "geglu", True)(gate, up)


def rope_cache(positions, rotary_dim, base=10000.0, *, dtype=None, device=None):
    """The (cos, sin) tables of rotary embeddings for ``positions`` positions (an int: 0 ..
    positions - 1) and a rotated width ``rotary_dim`` (even): angle[p, j] = p * base **
    (-2 j / rotary_dim), computed in float64 and rounded once to ``dtype`` (float32 by default),
    each of shape (positions, rotary_dim / 2)."""
    import pygpukit as gp

    if rotary_dim <= 0 or rotary_dim % 2:
        raise ValueError(f"rope_cache: rotary_dim must be a positive even number, got {rotary_dim}")
    dtype = gp.float32 if dtype is None else dtype
    pos = gp.arange(positions, dtype=gp.float64, device=device)
    j = gp.arange(0, rotary_dim, 2, dtype=gp.float64, device=device)
    angle = pos[:, None] * (float(base) ** (-j / rotary_dim))[None, :]
    return gp.cos(angle).astype(dtype), gp.sin(angle).astype(dtype)


def apply_rotary(x, cos, sin, positions=None, *, interleaved=False, out=None):
    """Rotary position embedding of ``x`` (..., head_dim) with the tables of :func:`rope_cache`
    (shape (P, R / 2), R <= head_dim): the first R columns of each row are rotated by its
    position's angles, the rest copied (partial rotary). ``positions``: an int, the position of
    the first row along axis -2 (the sequence axis of (B, H, S, D); 0 when omitted: checked on
    the host, no device read); or an integer array broadcast against x.shape[:-1], each in [0,
    P) (checked with one read back), e.g. ``pos[:, None]`` for (B, S, H, D) or (B, 1, 1) per
    sequence at decode. ``interleaved=False`` rotates the halves (j, j + R / 2) (GPT-NeoX, Llama);
    ``True`` the neighbours (2j, 2j + 1) (GPT-J). Computed in float32 (float64 for float64) and
    rounded once; ``out=x`` rotates in place."""
    return _nn.apply_rotary(x, cos, sin, positions, interleaved, out)


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """softmax(scale * query @ key^T + mask) @ value with torch's layout (..., heads, sequence,
    head dim) and arguments. ``attn_mask``: bool (True takes part) or floating (added),
    broadcast to (..., Hq, Sq, Sk). ``is_causal``: query i sees keys j <= i + Sk - Sq (bottom
    right, as FlashAttention-2; torch aligns at the top left when Sq != Sk). ``enable_gqa``: Hq
    a multiple of Hk (grouped-query / multi-query heads). A query row with no key left gives
    zeros (as torch). Inference only: ``dropout_p`` must be 0."""
    if dropout_p != 0.0:
        raise ValueError(
            f"scaled_dot_product_attention: inference only, dropout_p must be 0, got {dropout_p}"
        )
    return _nn.scaled_dot_product_attention(
        query, key, value, attn_mask, is_causal, scale, enable_gqa
    )


def paged_kv_append(k_cache, v_cache, k, v, block_table, start):
    """Writes ``k`` and ``v`` (B, Hk, T, D) into a paged KV cache at positions start[b] ..
    start[b] + T - 1 of each sequence b. The caches are (blocks, Hk, block size, D), shared by
    the sequences; sequence b's i-th block is ``block_table[b, i]`` (B, max blocks). ``start``:
    (B,) integers (each sequence's length before the append)."""
    _nn.paged_kv_append(k_cache, v_cache, k, v, block_table, start)


def paged_attention(
    q, k_cache, v_cache, block_table, seq_lens, *, scale=None, is_causal=True, check_table=True
):
    """Attention of ``q`` (B, Hq, Sq, D) over each sequence's first ``seq_lens[b]`` cached keys
    and values of a paged cache (see :func:`paged_kv_append`; Hq a multiple of Hk). With
    ``is_causal`` q's rows are the sequence's last Sq positions (decode: Sq = 1 sees them all).
    Table entries past a sequence's length are never read; ``check_table`` checks the others
    are blocks of the cache (IndexError; one read back per call). Serving loops that keep their
    tables valid pass ``check_table=False``: a bad id then reads the nearest block of the cache
    on the fused CUDA path (never past it) and raises on the composed one."""
    return _nn.paged_attention(
        q, k_cache, v_cache, block_table, seq_lens, scale, is_causal, check_table
    )


# torch's spelling: ``import pygpukit.nn.functional as F`` gives this module.
functional = _sys.modules[__name__]
_sys.modules[__name__ + ".functional"] = functional
