"""A Llama-style decoder stack (examples/llama.py: RMSNorm with the residual fused, fused QKV,
rotary, causal grouped-query attention over a KV cache, SwiGLU MLP) beside a torch module of the
same structure on the same weights (shared through DLPack): a prompt's prefill and decode steps.
Two torch peers: "torch" dispatches SDPA as torch chooses (cuDNN on Hopper, whose decode steps
measured about 40 ms each, presumably a plan per new key length) and "torch_flash" holds SDPA to
the flash / memory-efficient kernels.

Defaults: 8 layers, d 4096, 32 heads, 8 KV heads, hidden 14336, bf16, prefill 2048 tokens, 128
decode steps, batch 1. Prefill is timed in interleaved rounds (ours, then each peer, each with its
own CUDA events); decode steps alternate ours / the peers step by step over the same positions, each
step timed; tokens/s from the median step. Outputs are compared after the prefill and after the
last step (relative error of the final hidden states, ours vs torch, both against each other;
bf16 through every layer). Results go to <out>/<gpu>-sm<XY>-transformer.json.

    python benchmarks/transformer.py [--layers 8] [--prompt 2048] [--steps 128]
    python benchmarks/transformer.py --device cpu --layers 2 --dim 256 --heads 8 --kv-heads 2 \\
        --hidden 512 --prompt 32 --steps 4       # a smoke run of ours alone
"""

import argparse
import contextlib
import os
import statistics
import sys

import numpy as np
from peers import cuda_torch
from results_file import write_result

import pygpukit as gp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import llama  # noqa: E402


class TorchLlama:
    """The same model with torch ops (F.rms_norm, F.linear, Hugging Face-style rotary,
    F.scaled_dot_product_attention with enable_gqa) and a torch KV cache."""

    def __init__(self, torch, cfg, weights, backends=None):
        self.t, self.cfg = torch, cfg
        # SDPA backends to allow (None: torch's own choice, cuDNN on Hopper).
        self.backends = backends
        to = torch.from_dlpack
        self.w = {
            "layers": [{k: to(a) for k, a in lw.items()} for lw in weights["layers"]],
            "final_norm": to(weights["final_norm"]),
        }
        hd = cfg.head_dim
        dt = self.w["final_norm"].dtype
        inv = cfg.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        ang = torch.arange(cfg.max_len, dtype=torch.float64)[:, None] * inv[None, :]
        emb = torch.cat((ang, ang), dim=-1).cuda()
        self.cos, self.sin = emb.cos().to(dt), emb.sin().to(dt)
        shape = (1, cfg.kv_heads, cfg.max_len, hd)
        self.k = [torch.zeros(shape, dtype=dt, device="cuda") for _ in range(cfg.layers)]
        self.v = [torch.zeros(shape, dtype=dt, device="cuda") for _ in range(cfg.layers)]

    def forward(self, x, pos):
        t, cfg = self.t, self.cfg
        F = t.nn.functional
        n, hd = x.shape[0], cfg.head_dim
        cos = self.cos[pos : pos + n][None, :, None, :]  # (1, T, 1, hd)
        sin = self.sin[pos : pos + n][None, :, None, :]

        def rope(a):
            a1, a2 = a[..., : hd // 2], a[..., hd // 2 :]
            return a * cos + t.cat((-a2, a1), dim=-1) * sin

        nq, nk = cfg.heads * hd, cfg.kv_heads * hd
        h = x
        for i, lw in enumerate(self.w["layers"]):
            y = F.rms_norm(h, (cfg.dim,), lw["attn_norm"], cfg.eps)
            qkv = F.linear(y, lw["wqkv"])
            q = rope(qkv[:, :nq].view(1, n, cfg.heads, hd)).transpose(1, 2)
            k = rope(qkv[:, nq : nq + nk].view(1, n, cfg.kv_heads, hd)).transpose(1, 2)
            v = qkv[:, nq + nk :].view(1, n, cfg.kv_heads, hd).transpose(1, 2)
            self.k[i][:, :, pos : pos + n] = k
            self.v[i][:, :, pos : pos + n] = v
            with self.sdpa_backends():
                o = F.scaled_dot_product_attention(
                    q,
                    self.k[i][:, :, : pos + n],
                    self.v[i][:, :, : pos + n],
                    is_causal=n > 1,  # torch aligns causal at the top left: prefill from 0 only
                    enable_gqa=True,
                )
            h = h + F.linear(o.transpose(1, 2).reshape(n, nq), lw["wo"])
            y = F.rms_norm(h, (cfg.dim,), lw["mlp_norm"], cfg.eps)
            gate, up = F.linear(y, lw["wgu"]).chunk(2, dim=-1)
            h = h + F.linear(F.silu(gate) * up, lw["wdown"])
        return F.rms_norm(h, (cfg.dim,), self.w["final_norm"], cfg.eps)

    def sdpa_backends(self):
        if self.backends is None:
            return contextlib.nullcontext()
        return self.t.nn.attention.sdpa_kernel(self.backends)


def timer(dev, torch):
    """(start, stop) -> ms for ours or torch, each with its own events."""

    def ours(fn):
        s, e = gp.Event(dev), gp.Event(dev)
        s.record()
        out = fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e), out

    def theirs(fn):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        out = fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e), out

    return ours, theirs


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--hidden", type=int, default=14336)
    p.add_argument("--prompt", type=int, default=2048)
    p.add_argument("--steps", type=int, default=128)
    p.add_argument("--reps", type=int, default=5, help="interleaved prefill rounds")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    dev = gp.Device(args.device)
    torch = cuda_torch() if dev.type == "cuda" else None
    cfg = llama.Config(
        args.layers, args.dim, args.heads, args.kv_heads, args.hidden, args.prompt + args.steps
    )
    weights = llama.init_weights(cfg, seed=0, device=dev)
    ours = llama.Llama(cfg, weights, device=dev)
    rng = gp.random.default_rng(1)
    x = rng.normal(0.0, 1.0, (args.prompt, cfg.dim), dtype=gp.float32, device=dev)
    x = x.astype(gp.bfloat16)
    steps_in = rng.normal(0.0, 1.0, (args.steps, cfg.dim), dtype=gp.float32, device=dev)
    steps_in = steps_in.astype(gp.bfloat16)
    result = {"config": vars(cfg) | {"prompt": args.prompt, "steps": args.steps, "dtype": "bf16"}}
    props = gp.device_properties(dev)
    if torch is None:  # a smoke run of ours alone (CPU, or no torch)
        h = ours.forward(x, 0)
        for i in range(args.steps):
            h = ours.forward(steps_in[i : i + 1], args.prompt + i)
        gp.synchronize(dev)
        print(f"ours only: prefill {x.shape} -> {h.shape} {h.dtype}")
        write_result(result, args.out, props, "transformer", cuda=dev.type == "cuda")
        return 0
    # Peers: torch as it dispatches by default, and torch with SDPA held to its flash /
    # memory-efficient kernels (no per-shape cuDNN plans).
    sdpa = torch.nn.attention.SDPBackend
    refs = {
        "torch": TorchLlama(torch, cfg, weights),
        "torch_flash": TorchLlama(
            torch, cfg, weights, [sdpa.FLASH_ATTENTION, sdpa.EFFICIENT_ATTENTION]
        ),
    }
    tx, tsteps = torch.from_dlpack(x), torch.from_dlpack(steps_in)
    time_ours, time_torch = timer(dev, torch)
    names = ["ours", *refs]
    pre = {k: [] for k in names}
    dec = {k: [] for k in names}
    err_prefill, err_decode = {}, {}
    with torch.inference_mode():
        ours.forward(x, 0)  # warm-up (JIT, cuBLASLt plans)
        for ref in refs.values():
            ref.forward(tx, 0)
        gp.synchronize(dev), torch.cuda.synchronize()
        for _ in range(args.reps):
            ms, h_ours = time_ours(lambda: ours.forward(x, 0))
            pre["ours"].append(ms)
            for k, ref in refs.items():
                ms, h_torch = time_torch(lambda ref=ref: ref.forward(tx, 0))
                pre[k].append(ms)
                err_prefill[k] = h_torch
        got = gp.to_numpy(h_ours.astype(gp.float32))
        err_prefill = {k: rel_err(got, h.float().cpu()) for k, h in err_prefill.items()}
        for i in range(args.steps):
            ms, h_ours = time_ours(lambda i=i: ours.forward(steps_in[i : i + 1], args.prompt + i))
            dec["ours"].append(ms)
            for k, ref in refs.items():
                ms, h_torch = time_torch(
                    lambda i=i, ref=ref: ref.forward(tsteps[i : i + 1], args.prompt + i)
                )
                dec[k].append(ms)
                err_decode[k] = h_torch
        got = gp.to_numpy(h_ours.astype(gp.float32))
        err_decode = {k: rel_err(got, h.float().cpu()) for k, h in err_decode.items()}
    out = {}
    for k in names:
        pm, dm = statistics.median(pre[k]), statistics.median(dec[k])
        out[k] = {
            "prefill_ms": pm,
            "prefill_spread": max(pre[k]) / min(pre[k]),
            "prefill_tokens_per_s": args.prompt / (pm * 1e-3),
            "decode_step_ms": dm,
            "decode_tokens_per_s": 1e3 / dm,
            "decode_step_p90_ms": float(np.percentile(dec[k], 90)),
        }
    for k in refs:
        out[f"prefill_ours_vs_{k}"] = out[k]["prefill_ms"] / out["ours"]["prefill_ms"]
        out[f"decode_ours_vs_{k}"] = out[k]["decode_step_ms"] / out["ours"]["decode_step_ms"]
    # Relative error of our output against each peer's (bf16 through 8 layers).
    out["rel_err_prefill"], out["rel_err_decode"] = err_prefill, err_decode
    result |= {
        "gpu": props["name"],
        "sm": props["sm"],
        "versions": {"pygpukit": gp.__version__, "torch": torch.__version__},
        "timing": "prefill: interleaved rounds (ours, torch, torch_flash), own CUDA events, "
        "median; decode: steps alternate ours / torch / torch_flash at the same positions, "
        "median step",
        "results": out,
    }
    for k in names:
        r = out[k]
        print(
            f"{k:11s} prefill {r['prefill_ms']:8.2f} ms (±{(r['prefill_spread'] - 1) * 100:.0f}%) "
            f"{r['prefill_tokens_per_s']:9.0f} tok/s   decode {r['decode_step_ms']:6.2f} ms/step "
            f"{r['decode_tokens_per_s']:7.1f} tok/s"
        )
    for k in refs:
        print(
            f"ours/{k}: prefill {out[f'prefill_ours_vs_{k}']:.2f}x, decode "
            f"{out[f'decode_ours_vs_{k}']:.2f}x; rel. error prefill {err_prefill[k]:.2e}, "
            f"decode {err_decode[k]:.2e}"
        )
    write_result(result, args.out, props, "transformer", cuda=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
