"""Fused-attention launches for Nsight Compute (run by scripts/gpu.sh profile-attention): bf16
prefill, batch 16, 32 heads, 1024 queries and keys, head dim 128, non-causal and causal, two
calls per Hopper kernel variant (PYGPUKIT_ATTENTION_KERNEL: the default, then the serial one),
so that ncu's pipe utilization and stall reasons show what bounds the kernel.
    ncu --clock-control none -k regex:pgk_attn_sm90 python3 scripts/attention_profile.py
"""

import os

import pygpukit as gp


def main():
    rng = gp.random.default_rng(0)
    shape = (16, 32, 1024, 128)
    q, k, v = (rng.normal(0.0, 1.0, shape, dtype=gp.float32).astype(gp.bfloat16) for _ in range(3))
    for variant in ("", "sm90s"):
        os.environ["PYGPUKIT_ATTENTION_KERNEL"] = variant
        for causal in (False, True):
            for _ in range(2):
                o = gp.nn.scaled_dot_product_attention(q, k, v, is_causal=causal)
            gp.synchronize()
            first = gp.to_numpy(o[0, 0, :1, :1].astype(gp.float32))[0, 0]
            print(variant or "default", causal, float(first))


if __name__ == "__main__":
    main()
