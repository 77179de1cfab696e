"""scaled_dot_product_attention beside torch's backends (default, cuDNN, flash), interleaved.

Prefill: bf16, head dim 128, 32 heads, sequence 1024 / 4096 / 16384 with batch x sequence =
16384, causal and not; TFLOP/s count 4 B H Sq Sk D (half of it causal). Decode: batch 64, 32
query heads over 8 KV heads, one query token, KV length 2048 ... 32768, from a contiguous cache
and from a paged one (16-key blocks in shuffled order; the peers read the same values
contiguous), and one sequence of 32768;
TB/s count the cache's bytes (k and v read once). Timing as peers.interleaved_ms: each round
runs a batch of calls of every candidate in turn with its own CUDA events; medians, spreads.
Errors (max / mean absolute) against a float64 reference over 4 query rows of the first head.
Where our Hopper kernel runs, its serial, ping-pong and non-persistent variants ("ours_sm90s",
"ours_sm90pp", "ours_sm90np") and the SM80 kernel ("ours_sm80") are timed in the same rounds,
and where the three-stage SM80 kernel runs, its two-stage form ("ours_sm80s2";
PYGPUKIT_ATTENTION_KERNEL).
Results go to <out>/<gpu>-sm<XY>-attention.json.

    python benchmarks/attention.py [--quick] [--reps 5]
"""

import argparse
import contextlib
import os

import numpy as np
from peers import Lib, cuda_torch, interleaved_ms
from results_file import write_result

import pygpukit as gp

PREFILL_SEQ = (1024, 4096, 16384)
DECODE_KV = (2048, 8192, 32768)
PAGE = 16  # keys per block of the paged cache


class TorchBackend(Lib):
    """torch timed with one SDPA backend forced (None: its own choice)."""

    def __init__(self, dev, backend):
        super().__init__("torch", dev)
        self.backend = backend

    def time_ms(self, call, iters):
        if self.backend is None:
            return super().time_ms(call, iters)
        from torch.nn.attention import sdpa_kernel

        with sdpa_kernel(self.backend):
            return super().time_ms(call, iters)


class OursKernel(Lib):
    """ours with PYGPUKIT_ATTENTION_KERNEL set while its calls run (the Hopper kernel's serial
    variant "sm90s", or the SM80 kernel "sm80")."""

    def __init__(self, dev, kernel):
        super().__init__("ours", dev)
        self.kernel = kernel

    def time_ms(self, call, iters):
        with forced_kernel(self.kernel):
            return super().time_ms(call, iters)


@contextlib.contextmanager
def forced_kernel(kernel):
    old = os.environ.get("PYGPUKIT_ATTENTION_KERNEL")
    os.environ["PYGPUKIT_ATTENTION_KERNEL"] = kernel
    try:
        yield
    finally:
        if old is None:
            del os.environ["PYGPUKIT_ATTENTION_KERNEL"]
        else:
            os.environ["PYGPUKIT_ATTENTION_KERNEL"] = old


def paged_call(gq, gk, gv, rng, block_size=PAGE):
    """Our paged_attention over k and v scattered into a paged cache of `block_size`-key
    blocks in shuffled order (the peers read the same values contiguous)."""
    b, hk, sk, d = gk.shape
    per = sk // block_size
    order = rng.permutation(b * per)  # block i of the contiguous layout lives at order[i]
    where = gp.asarray(np.argsort(order), device=gk.device)

    def paged(x):  # (B, Hk, Sk, D) -> (B * per, Hk, block, D), block i at order[i]
        blocks = gp.reshape(x, (b, hk, per, block_size, d))
        blocks = gp.reshape(gp.permute_dims(blocks, (0, 2, 1, 3, 4)), (b * per, hk, block_size, d))
        return gp.take(blocks, where, axis=0)

    kc, vc = paged(gk), paged(gv)
    table = gp.asarray(order.reshape(b, per).astype(np.int64), device=gk.device)
    lens = gp.asarray(np.full(b, sk, np.int64), device=gk.device)

    def call():
        return gp.nn.paged_attention(gq, kc, vc, table, lens, check_table=False)

    return call


def reference(q, k, v, causal, rows):
    """float64 attention of query rows `rows` of batch 0, head 0 (kv head 0)."""
    q = q[0, 0, rows].astype(np.float64)
    k, v = k[0, 0].astype(np.float64), v[0, 0].astype(np.float64)
    s = q @ k.T / np.sqrt(q.shape[-1])
    sk = k.shape[0]
    if causal:
        s = np.where(np.arange(sk)[None, :] <= np.asarray(rows)[:, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="one prefill and one decode length")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch = cuda_torch()
    if torch is None:
        raise SystemExit("needs torch with a CUDA device")
    from torch.nn.attention import SDPBackend

    dev = gp.Device("cuda:0")
    props = gp.device_properties(dev)
    ours = Lib("ours", dev)
    peers = {
        "torch": TorchBackend(dev, None),
        "torch_cudnn": TorchBackend(dev, SDPBackend.CUDNN_ATTENTION),
        "torch_flash": TorchBackend(dev, SDPBackend.FLASH_ATTENTION),
    }
    rng = np.random.default_rng(0)  # the paged cache's block order
    grng = gp.random.default_rng(0)
    rows_out = []
    cases = []
    for s in PREFILL_SEQ[:1] if args.quick else PREFILL_SEQ:
        for causal in (False, True):
            cases.append(("prefill", 16384 // s, 32, 32, s, s, causal))
    for n in DECODE_KV[:1] if args.quick else DECODE_KV:
        cases.append(("decode", 64, 32, 8, 1, n, False))
        cases.append(("decode_paged", 64, 32, 8, 1, n, False))
    # One long sequence: few CTAs without splitting the keys (split-KV's case).
    cases.append(("decode", 1, 32, 8, 1, DECODE_KV[-1], False))
    for kind, b, hq, hk, sq, sk, causal in cases:
        d = 128
        # Inputs drawn on the device (a decode cache of 64 x 8 x 32768 x 128 is 4 GiB in bf16);
        # only the reference's rows come back to the host.
        gq, gk, gv = (
            grng.normal(0.0, 1.0, shape, dtype=gp.float32, device=dev).astype(gp.bfloat16)
            for shape in ((b, hq, sq, d), (b, hk, sk, d), (b, hk, sk, d))
        )
        tq, tk, tv = (torch.from_dlpack(a) for a in (gq, gk, gv))
        gqa = hq != hk

        def ours_call(gq=gq, gk=gk, gv=gv, causal=causal, gqa=gqa):
            return gp.nn.scaled_dot_product_attention(gq, gk, gv, is_causal=causal, enable_gqa=gqa)

        if kind == "decode_paged":
            ours_call = paged_call(gq, gk, gv, rng)

        def torch_call(tq=tq, tk=tk, tv=tv, causal=causal, gqa=gqa):
            F = torch.nn.functional
            return F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, enable_gqa=gqa)

        rows = [0, 1, sq // 2, sq - 1] if sq > 1 else [0]
        ref = reference(
            *(gp.to_numpy(a[0:1, 0:1].astype(gp.float32)) for a in (gq, gk, gv)), causal, rows
        )
        calls = {"ours": (ours, ours_call)}
        errors = {}
        got = gp.to_numpy(ours_call()[0:1, 0:1].astype(gp.float32))[0, 0, rows]
        errors["ours"] = got - ref
        for name, lib in peers.items():
            try:
                lib.time_ms(torch_call, 1)  # warm-up; raises where the backend refuses the shape
            except Exception as e:  # noqa: BLE001 - one backend's refusal must not end the run
                print(f"  {name}: {type(e).__name__}: {str(e).splitlines()[0]}")
                continue
            calls[name] = (lib, torch_call)
        errors["torch"] = torch_call()[0, 0, rows].float().cpu().numpy() - ref
        gp.reset_dispatch_stats()
        ours_call()
        gp.synchronize(dev)
        kernels = sorted(gp.dispatch_stats()["per_kernel"])
        # Where the Hopper kernel runs, its serial, ping-pong and non-persistent variants and the
        # SM80 kernel are timed too; where the three-stage SM80 kernel runs, its two-stage form.
        variants = ()
        if any(k.startswith("pgk_attn_sm90") for k in kernels):
            variants = ("sm90s", "sm90pp", "sm90np", "sm80")
        elif any(k.endswith("_s3") for k in kernels):
            variants = ("sm80s2",)
        for variant in variants:
            with forced_kernel(variant):
                got = gp.to_numpy(ours_call()[0:1, 0:1].astype(gp.float32))[0, 0, rows]
            errors[f"ours_{variant}"] = got - ref
            calls[f"ours_{variant}"] = (OursKernel(dev, variant), ours_call)
        timed = interleaved_ms(calls, args.iters, args.reps)
        flops = 4.0 * b * hq * sq * sk * d * (0.5 if causal else 1.0)
        cache_bytes = 2.0 * b * hk * sk * d * 2
        row = {"kind": kind, "batch": b, "hq": hq, "hk": hk, "sq": sq, "sk": sk, "d": d}
        row |= {"causal": causal, "dtype": "bf16", "kernels": kernels}
        for name, t in timed.items():
            if "error" in t:
                row[name] = t
                continue
            sec = t["ms"] * 1e-3
            row[name] = {"us": t["ms"] * 1e3, "spread": t["spread"]}
            row[name]["tflops" if kind == "prefill" else "tbps"] = (
                flops / sec / 1e12 if kind == "prefill" else cache_bytes / sec / 1e12
            )
            if name in errors:
                e = np.abs(errors[name])
                row[name] |= {"max_abs": float(e.max()), "mean_abs": float(e.mean())}
        best = min(
            (row[k]["us"] for k in peers if k in row and "us" in row[k]), default=float("nan")
        )
        row["ours_vs_best_torch"] = best / row["ours"]["us"] if "us" in row["ours"] else None
        rows_out.append(row)
        unit = "tflops" if kind == "prefill" else "tbps"
        cells = "  ".join(f"{k} {row[k][unit]:7.1f}" for k in calls if k in row and unit in row[k])
        print(f"{kind} b{b} hq{hq} hk{hk} sq{sq} sk{sk} causal={causal}: {cells} ({unit})")
    result = {
        "gpu": props["name"],
        "sm": props["sm"],
        "versions": {"pygpukit": gp.__version__, "torch": torch.__version__},
        "timing": "interleaved rounds, own CUDA events per library, median per call",
        "results": rows_out,
    }
    write_result(result, args.out, props, "attention", cuda=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
