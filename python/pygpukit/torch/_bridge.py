"""Tensors <-> arrays on the same memory through DLPack (no copies; on CUDA the DLPack stream
handshake orders the two libraries' work), and which tensors pygpukit's kernels take."""

import torch

import pygpukit as gp

# torch dtypes the patched layers hand to pygpukit (others fall back to torch).
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DEVICE_TYPES = ("cpu", "cuda")


def to_gp(t):
    """A pygpukit array viewing tensor ``t``'s memory (its shape, strides and device). A tensor
    with torch's lazy negation or conjugation bit is materialized first: torch's DLPack export
    hands out such a tensor's memory without applying the bit (a wrong sign on our side)."""
    if t.is_neg() or t.is_conj():
        t = t.resolve_neg().resolve_conj()
    return gp.from_dlpack(t)


def to_torch(a):
    """A torch tensor viewing pygpukit array ``a``'s memory."""
    return torch.from_dlpack(a)


def usable(*tensors):
    """Whether pygpukit's path may take these tensors (``None`` entries are ignored): float32 /
    float16 / bfloat16 of one dtype on one CPU or CUDA device, and no autograd wanted (the
    kernels are inference only: a tensor that requires grad while grad mode is on keeps torch's
    path, so that backward still works)."""
    first = None
    grad = torch.is_grad_enabled()
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, torch.Tensor) or t.dtype not in DTYPES or t.is_sparse:
            return False
        if t.device.type not in DEVICE_TYPES or (grad and t.requires_grad):
            return False
        if first is None:
            first = t
        elif t.dtype != first.dtype or t.device != first.device:
            return False
    return first is not None
