"""PyTorch integration: run a torch model's layers on pygpukit's kernels (``pip install
pygpukit[torch]``; ``import pygpukit`` itself never imports torch).

    import pygpukit.torch as pgt
    report = pgt.patch(model)          # Linear, norms, GELU / SiLU, scaled_dot_product_attention
    y = model(x)                       # the same tensors in and out, no copies (DLPack views)
    pgt.unpatch(model)                 # the original forwards, the same function objects
    with pgt.patched(model):           # or for one block
        y = model(x)

Patched layers take pygpukit's path for inference on float32 / float16 / bfloat16 tensors on the
CPU or a CUDA device pygpukit drives, and fall back to the original forward call by call
otherwise (autograd wanted, other dtypes, arguments the fused op does not take).
"""

try:
    import torch as _torch  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "pygpukit.torch needs PyTorch (pip install pygpukit[torch] or pip install torch)"
    ) from e

from ._bridge import to_gp, to_torch
from ._patch import OPS, PatchReport, patch, patched, unpatch

__all__ = ["OPS", "PatchReport", "patch", "patched", "to_gp", "to_torch", "unpatch"]
