"""Layout probes for the fused attention kernels on the GPU: inputs whose outputs expose where
a fragment or descriptor layout goes wrong, printed compactly (for a kernel's first runs).

  * p_equals_o: V = I (Sk = D), so O is P itself: a wrong S / P layout shows as the (row, key)
    positions that differ.
  * q_through_k: K = I as well, so S = Q and O = softmax(scale * Q): Q's and K's descriptors.
  * uniform_p: Q = 0, so P = 1 / Sk everywhere and O is the mean of V's rows: V's descriptor.
Each probe runs for every kernel variant asked for (PYGPUKIT_ATTENTION_KERNEL values; "" is
the default) and head dim; the error is against float64, relative to the largest |O|.

    python scripts/attention_probe.py [--variants ,sm90s,sm90pp,sm80] [--dims 64,128]
"""

import argparse
import os

import numpy as np

import pygpukit as gp


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ranges(cols):
    """[1, 2, 3, 7] -> '1-3,7'."""
    out, start = [], None
    for i, c in enumerate(cols):
        if start is None:
            start = c
        if i + 1 == len(cols) or cols[i + 1] != c + 1:
            out.append(f"{start}-{c}" if c != start else f"{c}")
            start = None
    return ",".join(out)


def probe(name, q, k, v, dev, variant):
    os.environ["PYGPUKIT_ATTENTION_KERNEL"] = variant
    gq, gk, gv = (gp.asarray(a, device=dev).astype(gp.bfloat16) for a in (q, k, v))
    gp.reset_dispatch_stats()
    got = gp.to_numpy(gp.nn.scaled_dot_product_attention(gq, gk, gv).astype(gp.float32))
    kernels = sorted(n for n in gp.dispatch_stats()["per_kernel"] if "attn" in n)
    qf, kf, vf = (gp.to_numpy(a.astype(gp.float32)).astype(np.float64) for a in (gq, gk, gv))
    ref = softmax(qf @ np.swapaxes(kf, -1, -2) / np.sqrt(q.shape[-1])) @ vf
    diff = np.abs(got[0, 0] - ref[0, 0]) / max(np.abs(ref).max(), 1e-30)
    bad = diff > 0.02
    print(
        f"{name:12s} {variant or 'default':6s} d{q.shape[-1]:<4d} max rel err {diff.max():.2e} "
        f"bad {int(bad.sum())}/{bad.size} {kernels}"
    )
    if bad.any():
        for r in [r for r in range(bad.shape[0]) if bad[r].any()][:6]:
            print(f"    row {r}: bad columns {ranges(list(np.nonzero(bad[r])[0]))}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--variants", default=",sm90s,sm90pp,sm80")
    p.add_argument("--dims", default="64,128")
    p.add_argument("--device", default="cuda:0")
    args = p.parse_args()
    dev = gp.Device(args.device)
    rng = np.random.default_rng(0)
    for d in (int(x) for x in args.dims.split(",")):
        s = d  # Sk = D: V = I makes O = P
        eye = np.eye(d, dtype=np.float32)[None, None]
        q = rng.standard_normal((1, 1, 128, d)).astype(np.float32) * 2
        k = rng.standard_normal((1, 1, s, d)).astype(np.float32)
        v = rng.standard_normal((1, 1, s, d)).astype(np.float32)
        for variant in args.variants.split(","):
            probe("p_equals_o", q, k, eye, dev, variant)
            probe("q_through_k", q, eye, eye, dev, variant)
            probe("uniform_p", np.zeros_like(q), k, v, dev, variant)
    os.environ.pop("PYGPUKIT_ATTENTION_KERNEL", None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
