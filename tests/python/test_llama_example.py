"""examples/llama.py (the Llama-style decoder stack built from gp ops) against a NumPy float64
model of the same structure on the same weights: a prompt's prefill and decode steps over the
KV cache, so rotary positions, grouped-query heads, the causal alignment and the fused residual
adds are checked end to end."""

import os
import sys

import numpy as np
from helpers import host

import pygpukit as gp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import llama  # noqa: E402


def ref_forward(cfg, w, cache, x, pos):
    """float64 model: cache is a per-layer list of [k (KV, len, hd), v] NumPy arrays."""
    hd, t = cfg.head_dim, x.shape[0]
    inv = cfg.rope_base ** (-np.arange(0, hd, 2) / hd)
    ang = np.arange(pos, pos + t)[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]  # (T, 1, hd / 2)

    def rope(a):  # (T, heads, hd), NeoX halves
        a1, a2 = a[..., : hd // 2], a[..., hd // 2 :]
        return np.concatenate([a1 * cos - a2 * sin, a2 * cos + a1 * sin], axis=-1)

    def rms(a, g):
        return a / np.sqrt((a * a).mean(-1, keepdims=True) + cfg.eps) * g

    h = x
    for i, lw in enumerate(w["layers"]):
        y = rms(h, lw["attn_norm"])
        qkv = y @ lw["wqkv"].T
        nq, nk = cfg.heads * hd, cfg.kv_heads * hd
        q = rope(qkv[:, :nq].reshape(t, cfg.heads, hd))
        k = rope(qkv[:, nq : nq + nk].reshape(t, cfg.kv_heads, hd))
        v = qkv[:, nq + nk :].reshape(t, cfg.kv_heads, hd)
        cache[i][0] = np.concatenate([cache[i][0], k.transpose(1, 0, 2)], axis=1)
        cache[i][1] = np.concatenate([cache[i][1], v.transpose(1, 0, 2)], axis=1)
        g = cfg.heads // cfg.kv_heads
        kk, vv = np.repeat(cache[i][0], g, axis=0), np.repeat(cache[i][1], g, axis=0)
        s = q.transpose(1, 0, 2) @ kk.transpose(0, 2, 1) / np.sqrt(hd)  # (H, T, pos + t)
        allowed = np.arange(pos + t)[None, :] <= np.arange(pos, pos + t)[:, None]
        s = np.where(allowed, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        o = (p @ vv).transpose(1, 0, 2).reshape(t, nq)
        h = h + o @ lw["wo"].T
        y = rms(h, lw["mlp_norm"])
        gu = y @ lw["wgu"].T
        gate, up = gu[:, : cfg.hidden], gu[:, cfg.hidden :]
        h = h + (gate / (1 + np.exp(-gate)) * up) @ lw["wdown"].T
    return rms(h, w["final_norm"])


def test_prefill_and_decode_match_a_float64_model(device):
    cfg = llama.Config(layers=2, dim=64, heads=4, kv_heads=2, hidden=96, max_len=24)
    weights = llama.init_weights(cfg, seed=3, dtype=gp.float32, device=device)
    model = llama.Llama(cfg, weights, dtype=gp.float32, device=device)
    w64 = {
        "layers": [
            {k: host(a).astype(np.float64) for k, a in lw.items()} for lw in weights["layers"]
        ],
        "final_norm": host(weights["final_norm"]).astype(np.float64),
    }
    cache = [
        [np.zeros((cfg.kv_heads, 0, cfg.head_dim)) for _ in range(2)] for _ in range(cfg.layers)
    ]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, cfg.dim)).astype(np.float32)
    got = host(model.forward(gp.asarray(x, device=device), 0))
    want = ref_forward(cfg, w64, cache, x.astype(np.float64), 0)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
    for step in range(3):  # decode: one token at a time, then a chunk of two
        t = 1 if step < 2 else 2
        pos = 10 + step
        xs = rng.standard_normal((t, cfg.dim)).astype(np.float32)
        got = host(model.forward(gp.asarray(xs, device=device), pos))
        want = ref_forward(cfg, w64, cache, xs.astype(np.float64), pos)
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
