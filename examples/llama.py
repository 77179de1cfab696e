"""A Llama-style decoder stack built from pygpukit ops alone: RMSNorm (the residual add fused),
one fused QKV projection, rotary embeddings, causal grouped-query attention over a KV cache, the
output projection, RMSNorm, a SwiGLU MLP. Random weights; prefill a prompt, then decode tokens.

    python examples/llama.py                 # a small model on the default device
    python examples/llama.py --layers 8 --dim 4096 --heads 32 --kv-heads 8 --hidden 14336

benchmarks/transformer.py times the same model beside a torch module of the same structure.
"""

import argparse
import time
from dataclasses import dataclass

import pygpukit as gp


@dataclass
class Config:
    layers: int = 2
    dim: int = 256
    heads: int = 8
    kv_heads: int = 2
    hidden: int = 512
    max_len: int = 256
    eps: float = 1e-5
    rope_base: float = 500000.0

    @property
    def head_dim(self):
        return self.dim // self.heads


def init_weights(cfg, seed=0, dtype=gp.bfloat16, device=None):
    """Random weights (normal, scaled by 1 / sqrt(fan-in)) per layer: the two norms' weights, the
    fused QKV projection (rows: q heads, then k, then v), the output projection, the fused gate
    and up projection (rows: gate, then up) and the down projection; then the final norm."""
    rng = gp.random.default_rng(seed)
    hd = cfg.head_dim

    def w(rows, cols):
        x = rng.normal(0.0, cols**-0.5, (rows, cols), dtype=gp.float32, device=device)
        return x.astype(dtype)

    def norm():
        x = rng.normal(0.0, 1.0, (cfg.dim,), dtype=gp.float32, device=device)
        return (1.0 + 0.1 * x).astype(dtype)

    layers = []
    for _ in range(cfg.layers):
        layers.append(
            {
                "attn_norm": norm(),
                "wqkv": w((cfg.heads + 2 * cfg.kv_heads) * hd, cfg.dim),
                "wo": w(cfg.dim, cfg.heads * hd),
                "mlp_norm": norm(),
                "wgu": w(2 * cfg.hidden, cfg.dim),
                "wdown": w(cfg.dim, cfg.hidden),
            }
        )
    return {"layers": layers, "final_norm": norm()}


class Llama:
    """The decoder stack with its KV cache (batch 1): forward(x, pos) runs the tokens x (T, dim)
    at positions pos .. pos + T - 1 and returns their final hidden states (T, dim)."""

    def __init__(self, cfg, weights, dtype=gp.bfloat16, device=None):
        self.cfg, self.w = cfg, weights
        hd = cfg.head_dim
        self.cos, self.sin = gp.nn.rope_cache(cfg.max_len, hd, cfg.rope_base, device=device)
        shape = (1, cfg.kv_heads, cfg.max_len, hd)
        self.k_cache = [gp.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.layers)]
        self.v_cache = [gp.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.layers)]
        self.device = device

    def _heads(self, a, t):
        """(T, n * hd) columns of the projection as a (1, n, T, hd) view."""
        hd = self.cfg.head_dim
        return gp.permute_dims(gp.reshape(a, (1, t, a.shape[1] // hd, hd)), (0, 2, 1, 3))

    def forward(self, x, pos):
        cfg, hd = self.cfg, self.cfg.head_dim
        t = x.shape[0]
        if pos + t > cfg.max_len:
            raise ValueError(f"positions {pos} + {t} exceed the cache of {cfg.max_len}")
        nq, nk = cfg.heads * hd, cfg.kv_heads * hd
        h, delta = x, None
        for i, lw in enumerate(self.w["layers"]):
            if delta is None:
                y = gp.nn.rms_norm(h, lw["attn_norm"], cfg.eps)
            else:
                y, h = gp.nn.rms_norm(delta, lw["attn_norm"], cfg.eps, residual=h)
            qkv = gp.linear(y, lw["wqkv"])  # (T, (H + 2 KV) * hd)
            # (1, heads, T, hd) views of the projection; rotary at positions pos .. pos + T - 1.
            q = gp.nn.apply_rotary(self._heads(qkv[:, :nq], t), self.cos, self.sin, pos)
            k = gp.nn.apply_rotary(self._heads(qkv[:, nq : nq + nk], t), self.cos, self.sin, pos)
            self.k_cache[i][:, :, pos : pos + t] = k
            self.v_cache[i][:, :, pos : pos + t] = self._heads(qkv[:, nq + nk :], t)
            o = gp.nn.scaled_dot_product_attention(
                q,
                self.k_cache[i][:, :, : pos + t],
                self.v_cache[i][:, :, : pos + t],
                is_causal=True,  # bottom-right: token pos + j sees positions 0 .. pos + j
                enable_gqa=True,
            )
            o = gp.reshape(gp.permute_dims(o, (0, 2, 1, 3)), (t, nq))
            delta = gp.linear(o, lw["wo"])
            y, h = gp.nn.rms_norm(delta, lw["mlp_norm"], cfg.eps, residual=h)
            delta = gp.linear(gp.nn.swiglu(gp.linear(y, lw["wgu"])), lw["wdown"])
        out, _ = gp.nn.rms_norm(delta, self.w["final_norm"], cfg.eps, residual=h)
        return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--prompt", type=int, default=64)
    p.add_argument("--steps", type=int, default=16)
    args = p.parse_args()
    cfg = Config(
        args.layers, args.dim, args.heads, args.kv_heads, args.hidden, args.prompt + args.steps
    )
    model = Llama(cfg, init_weights(cfg))
    rng = gp.random.default_rng(1)
    x = rng.normal(0.0, 1.0, (args.prompt, cfg.dim), dtype=gp.float32).astype(gp.bfloat16)
    t0 = time.perf_counter()
    h = model.forward(x, 0)
    gp.synchronize()
    t1 = time.perf_counter()
    for i in range(args.steps):
        h = model.forward(h[-1:], args.prompt + i)  # feed the last state back (no vocabulary)
    gp.synchronize()
    t2 = time.perf_counter()
    print(f"{cfg} on {gp.default_device()}")
    print(f"prefill {args.prompt} tokens: {(t1 - t0) * 1e3:.1f} ms; decode {args.steps} steps: ")
    print(f"  {args.steps / (t2 - t1):.1f} tokens/s; last state {h.shape} {h.dtype}")


if __name__ == "__main__":
    main()
