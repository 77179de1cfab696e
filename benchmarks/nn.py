"""gp.nn row ops beside torch: softmax, log_softmax, layer_norm, rms_norm and rms_norm with the
fused residual add, rows of 1024 ... 16384 in float32 and bfloat16, 2^log2n elements per call;
also SwiGLU's gated product (x of [rows, cols] -> [rows, cols / 2]; torch: silu of one half times
the other) and the rotary embedding of rows of 128 (torch: the usual x * cos + rotate_half(x) *
sin, as Hugging Face models write it).

TB/s counts the bytes each op must move once: the input read and the output written (with a
residual: x and the residual read, the sum and the output written; torch's unfused `h = x + r;
rms_norm(h)` is charged the same bytes, so its lower rate is its extra pass). Weights are one
row, not counted. Timing is interleaved (peers.interleaved_ms): every round times one batch of
back-to-back calls of each library in turn with its own CUDA events; medians, and each one's
spread (max / min batch). Errors (max and mean absolute) against a float64 reference of the
dtype-rounded inputs over 8 rows, for both. Results go to <out>/<gpu>-sm<XY>-nn.json.

    python benchmarks/nn.py [--log2n 26] [--cols 1024,4096,16384] [--dtypes float32,bfloat16]
    python benchmarks/nn.py --device cpu --log2n 12      # a smoke run of ours alone
"""

import numpy as np
from peers import header, interleaved_ms, start
from results_file import write_result

import pygpukit as gp

OPS = ("softmax", "log_softmax", "layer_norm", "rms_norm", "rms_norm_residual", "swiglu", "rope")


def add_arguments(p):
    p.add_argument("--cols", default="1024,4096,16384")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--ops", default=",".join(OPS))


def reference(op, x, r, w, b):
    """float64 reference of the rows of x (and r, w, b), as the ops define them."""
    if op in ("softmax", "log_softmax"):
        d = x - x.max(axis=-1, keepdims=True)
        s = np.exp(d).sum(axis=-1, keepdims=True)
        return d - np.log(s) if op == "log_softmax" else np.exp(d) / s
    if op == "layer_norm":
        c = x - x.mean(axis=-1, keepdims=True)
        return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5) * w + b
    if op == "swiglu":
        g, u = np.split(x, 2, axis=-1)
        return g / (1 + np.exp(-g)) * u
    if op == "rope":  # rows of 128 at positions 0 .. rows - 1 (tables in float64)
        y = x.reshape(-1, 128)
        ang = np.arange(y.shape[0])[:, None] * 10000.0 ** (-np.arange(0, 128, 2) / 128)[None, :]
        c, s = np.cos(ang), np.sin(ang)
        a, b = y[:, :64], y[:, 64:]
        return np.concatenate([a * c - b * s, b * c + a * s], axis=-1).reshape(x.shape)
    h = x + r if op == "rms_norm_residual" else x
    return h / np.sqrt((h * h).mean(axis=-1, keepdims=True) + 1e-6) * w


def calls_for(lib, op, x, r, w, b, rope):
    """The library's call of `op` on its arrays (`rope`: the library's (cos, sin) tables for rows
    of 128 at positions 0 .. rows - 1)."""
    if lib.name == "ours":
        f = {
            "softmax": lambda: gp.nn.softmax(x),
            "log_softmax": lambda: gp.nn.log_softmax(x),
            "layer_norm": lambda: gp.nn.layer_norm(x, x.shape[-1], w, b),
            "rms_norm": lambda: gp.nn.rms_norm(x, w, 1e-6),
            "rms_norm_residual": lambda: gp.nn.rms_norm(x, w, 1e-6, residual=r),
            "swiglu": lambda: gp.nn.swiglu(x),
            "rope": lambda: gp.nn.apply_rotary(gp.reshape(x, (-1, 128)), *rope),
        }
        return f[op]
    F = lib.m.nn.functional
    n = x.shape[-1]
    f = {
        "softmax": lambda: F.softmax(x, dim=-1),
        "log_softmax": lambda: F.log_softmax(x, dim=-1),
        "layer_norm": lambda: F.layer_norm(x, (n,), w, b),
        "rms_norm": lambda: F.rms_norm(x, (n,), w, 1e-6),
        "rms_norm_residual": lambda: (lambda h: (F.rms_norm(h, (n,), w, 1e-6), h))(x + r),
        "swiglu": lambda: (lambda g, u: F.silu(g) * u)(*x.chunk(2, dim=-1)),
        "rope": lambda: torch_rope(lib.m, x.view(-1, 128), *rope),
    }
    return f[op]


def torch_rope(torch, x, cos, sin):
    """Hugging Face's apply_rotary_pos_emb for one tensor: x * cos + rotate_half(x) * sin."""
    x1, x2 = x[..., :64], x[..., 64:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def first(out):
    return out[0] if isinstance(out, tuple) else out


def errors_of(lib, out, ref):
    """Max and mean absolute error of the output's first ref.size elements (the reference's
    rows, whatever the output's shape)."""
    if lib.name == "ours":
        got = gp.to_numpy(first(out).astype(gp.float64)).reshape(-1)
    else:
        got = first(out).double().cpu().numpy().reshape(-1)
    d = np.abs(got[: ref.size].reshape(ref.shape) - ref)
    return {"max_abs": float(np.nanmax(d)), "mean_abs": float(np.nanmean(d))}


def main():
    args, dev, props, libs, versions = start(__doc__, iters=20, add_arguments=add_arguments)
    rng = np.random.default_rng(0)
    n = 1 << args.log2n
    rows_out = []
    names = [lib.name for lib in libs if lib.name != "cupy"]
    print(f"{'case':38s} " + " ".join(f"{k + ' TB/s':>18s}" for k in names) + "  ours/torch")
    for dtype in args.dtypes.split(","):
        for cols in (int(c) for c in args.cols.split(",")):
            rows = max(1, n // cols)
            xh = (rng.standard_normal((rows, cols)) * 2).astype(np.float32)
            rh = (rng.standard_normal((rows, cols))).astype(np.float32)
            wh = (rng.random(cols) + 0.5).astype(np.float32)
            bh = (rng.standard_normal(cols) * 0.1).astype(np.float32)
            arrays = {lib.name: [lib.array(a, dtype) for a in (xh, rh, wh, bh)] for lib in libs}
            # The reference reads the inputs as rounded to the dtype.
            ours = arrays["ours"]
            x64, r64, w64, b64 = (gp.to_numpy(a.astype(gp.float64)) for a in ours)
            esize = np.dtype(np.float32).itemsize if dtype == "float32" else 2
            # Rotary tables for rows of 128 at positions 0 .. rows128 - 1: ours (cos, sin) of
            # (positions, 64) float32; torch's Hugging Face style full-width tables in the dtype.
            rows128 = rows * cols // 128
            tables = {}
            if "rope" in args.ops:
                tables["ours"] = gp.nn.rope_cache(rows128, 128, device=dev)
                for lib in libs:
                    if lib.name == "torch":
                        t = lib.m
                        inv = 10000.0 ** (-t.arange(0, 128, 2, dtype=t.float64) / 128)
                        ang = t.arange(rows128, dtype=t.float64)[:, None] * inv[None, :]
                        emb = t.cat((ang, ang), dim=-1).cuda()
                        tdt = getattr(t, dtype)
                        tables["torch"] = (emb.cos().to(tdt), emb.sin().to(tdt))
            for op in args.ops.split(","):
                streams = {"rms_norm_residual": 4, "swiglu": 1.5}.get(op, 2)
                nbytes = int(rows * cols * esize * streams)
                ref = reference(op, x64[:8], r64[:8], w64, b64)
                calls, errs = {}, {}
                for lib in libs:
                    if lib.name == "cupy":
                        continue
                    call = calls_for(lib, op, *arrays[lib.name], tables.get(lib.name))
                    errs[lib.name] = errors_of(lib, call(), ref)
                    calls[lib.name] = (lib, call)
                timed = interleaved_ms(calls, args.iters, args.reps)
                row = {"op": op, "dtype": dtype, "rows": rows, "cols": cols, "bytes": nbytes}
                for name, t in timed.items():
                    if "error" in t:
                        row[name] = {"error": t["error"]}
                        continue
                    row[name] = {
                        "us": t["ms"] * 1e3,
                        "tbps": nbytes / (t["ms"] * 1e-3) / 1e12,
                        "spread": t["spread"],
                        **errs[name],
                    }
                ratio = (
                    row["ours"]["tbps"] / row["torch"]["tbps"]
                    if "tbps" in row.get("torch", {}) and "tbps" in row["ours"]
                    else None
                )
                row["ours_vs_torch"] = ratio
                rows_out.append(row)
                cells = " ".join(
                    f"{row[k]['tbps']:9.2f} ±{(row[k]['spread'] - 1) * 100:3.0f}%".rjust(18)
                    if "tbps" in row.get(k, {})
                    else f"{'-':>18s}"
                    for k in names
                )
                tag = f"{dtype} {op} {rows}x{cols}"
                print(f"{tag:38s} {cells}  " + (f"{ratio:.2f}x" if ratio else ""), flush=True)
    result = {
        **header(props, versions, args),
        "log2n": args.log2n,
        "timing": "interleaved rounds: each library's batch of back-to-back calls in turn, its "
        "own CUDA events; median per call, spread = max / min batch",
        "results": rows_out,
    }
    write_result(result, args.out, props, "nn", cuda=dev.type == "cuda")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
