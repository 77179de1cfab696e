"""GEMM benchmark: gp.matmul (backend="auto") beside our cuBLASLt binding (backend="cublaslt")
and torch.matmul, same process, same input values. Writes
benchmarks/results/<gpu>-sm<XY>-gemm[-quick][-cold-l2].json.

Sections: "square" (M = N = K in 256 ... 8192), "llm" (M in 1, 16, 128, 2048, 8192 times
(K, N) in (4096, 4096), (4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192),
(4096, 128256), (8192, 8192)) and "tails" (no dim a multiple of a tile: 1000^3,
1531x777x2049, 4095x1023x4097, 2000x3000x1500; not in --quick runs); A is M x K, B is K x N,
both row-major. Dtypes: bf16, fp16, tf32 (float32 operands, precision="tf32") and fp32 (true
FP32, precision="highest"); torch gets allow_tf32 set to match (restored afterwards).

Timing: random normal inputs; a few warm-up calls, then `reps` rounds; each round times one
batch of `iters` back-to-back calls of every candidate in turn (ours, cuBLASLt, forced families,
torch) between two device events (gp.Event / torch.cuda.Event), so clock drift during a row
affects all alike; the median batch time divided by `iters` is the time per call. Unless --iters
is given, iters is chosen per candidate so that a batch takes >= ~2 ms. Default "warm" L2: the
same operands every call, like the published anchors. --cold-l2 rotates through enough distinct
copies of the operands that together they exceed max(128 MiB, 2 x L2), so each call reads its
operands from HBM.

Errors: for a random subset of rows (64) a float64 reference is computed with NumPy from the
operands as the GPU sees them (read back after rounding to the dtype). The relative error of
each element is |C - ref| / (|A_row| @ |B| + tiny), a per-element bound that is robust to
cancellation; max and mean over the subset are reported. TF32 rounding counts as error.
Rows with M <= 128 also report effective weight bandwidth K * N * itemsize / time (TB/s).

    python benchmarks/gemm.py [--quick] [--sections square,llm] [--dtypes bf16,fp16]
    python benchmarks/gemm.py --dtypes tf32 --b-layout t   # B = W.T (a linear layer's weight)
    python benchmarks/gemm.py --device cpu          # tiny smoke run of the whole pipeline
    python benchmarks/gemm.py --dry-run             # print the plan only
"""

import argparse
import itertools
import math
import platform
import statistics
import sys

import numpy as np
from peers import cuda_torch
from results_file import write_result

import pygpukit as gp

DTYPES = {  # name -> (storage dtype, precision)
    "bf16": ("bfloat16", "highest"),
    "fp16": ("float16", "highest"),
    "tf32": ("float32", "tf32"),
    "fp32": ("float32", "highest"),
}
ALIASES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
SQUARE = (256, 512, 1024, 2048, 4096, 8192)
LLM_M = (1, 16, 128, 2048, 8192)
# (K, N) of LLM projections: 4096-wide attention / MLP, 8192-wide MLP, a 128k vocabulary head,
# and the square 8192 of earlier runs.
LLM_KN = (
    (4096, 4096),
    (4096, 14336),
    (14336, 4096),
    (8192, 28672),
    (28672, 8192),
    (4096, 128256),
    (8192, 8192),
)
QUICK_KN = ((4096, 4096), (8192, 8192))
# (M, K, N) with tails in every dim (no multiple of a tile), large enough to fill the GPU.
TAILS = ((1000, 1000, 1000), (1531, 777, 2049), (4095, 1023, 4097), (2000, 3000, 1500))
SMOKE_SQUARE, SMOKE_M, SMOKE_KN = (16, 33), (1, 5, 16), ((33, 16), (16, 48))
SMOKE_TAILS = ((17, 9, 23),)
SECTIONS = ("square", "llm", "tails")
SKINNY_M = 128
FLAG_RATIO = 0.8
COLD_L2_BYTES = 128 << 20


def parse_args():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--device", default=None, help="'cpu' for a tiny smoke run (default: cuda)")
    p.add_argument(
        "--sections", default=None, help="square,llm,tails (default: all; --quick: square,llm)"
    )
    p.add_argument("--dtypes", default="bf16,fp16,tf32,fp32")
    p.add_argument("--sizes", default=None, help="square sizes, e.g. 1024,4096")
    p.add_argument("--llm-m", default=None, help="M values of the llm section, e.g. 1,16")
    p.add_argument("--quick", action="store_true", help="a few-minute subset")
    p.add_argument("--iters", type=int, default=None, help="calls per batch (default: adaptive)")
    p.add_argument("--reps", type=int, default=None, help="batches (default 10; cpu 3)")
    p.add_argument("--batch-ms", type=float, default=None, help="adaptive batch target (2 ms)")
    p.add_argument("--err-rows", type=int, default=64, help="rows checked against float64")
    p.add_argument("--cold-l2", action="store_true", help="rotate operand copies (HBM reads)")
    p.add_argument("--backend-compare", default="", help="extra columns, e.g. sm90,sm80,simt")
    p.add_argument(
        "--b-layout",
        choices=("row", "t"),
        default="row",
        help="B row-major (default) or 't': the transposed view of an (N, K) row-major array, "
        "a linear layer's weight (K-major B, which TF32 wgmma needs)",
    )
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dry-run", action="store_true", help="print the planned rows and exit")
    p.add_argument("--out", default=None, help="JSON folder (default benchmarks/results on CUDA)")
    return p.parse_args()


def ints(s):
    return tuple(int(x) for x in s.split(",") if x)


def plan(args, cpu):
    """[(section, m, k, n, dtype)] grouped by shape, so host operands are made once per shape."""
    dtypes = [ALIASES.get(d, d) for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in DTYPES:
            raise SystemExit(f"unknown dtype {d!r} (choose from {', '.join(DTYPES)})")
    square = SMOKE_SQUARE if cpu else SQUARE
    ms, kns = (SMOKE_M, SMOKE_KN) if cpu else (LLM_M, LLM_KN)
    quick = args.quick and not cpu
    rows = []
    for sec in sections(args):
        if sec not in SECTIONS:
            raise SystemExit(f"unknown section {sec!r} ({', '.join(SECTIONS)})")
        if sec == "tails":
            for d in dtypes:
                rows += [(sec, m, k, n, d) for m, k, n in (SMOKE_TAILS if cpu else TAILS)]
            continue
        for d in dtypes:
            lite = quick and d in ("tf32", "fp32")  # quick: fp32 types only at 4096^3
            if sec == "square":
                sizes = ints(args.sizes) if args.sizes else square
                if quick and not args.sizes:
                    sizes = (4096,) if lite else (1024, 4096, 8192)
                rows += [(sec, n, n, n, d) for n in sizes]
            elif not lite:
                m_list = ints(args.llm_m) if args.llm_m else ((16, 2048) if quick else ms)
                kn = QUICK_KN if quick else kns
                rows += [(sec, m, k, n, d) for m in m_list for k, n in kn]
    order = {d: i for i, d in enumerate(DTYPES)}
    return sorted(rows, key=lambda r: (SECTIONS.index(r[0]), r[1:4], order[r[4]]))


def sections(args):
    """The sections asked for: --sections, else all (quick runs: square and llm, so that quick
    rows stay the same from run to run)."""
    given = args.sections or ("square,llm" if args.quick else ",".join(SECTIONS))
    return [s for s in given.split(",") if s]


def pilot(fn, event, iters, batch_ms):
    """Warms `fn` up and returns the calls per batch: `iters`, or enough for >= batch_ms."""
    for _ in range(3):
        fn()
    if iters is not None:
        return iters
    per = max(batch_seconds(fn, event, 4) * 1e3, 1e-4)
    return int(min(10000, max(1, math.ceil(batch_ms / per))))


def batch_seconds(fn, event, iters):
    """Seconds per call over one batch of `iters` calls between two events."""
    s, e = event(), event()
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / 1e3 / iters


def interleaved(ctx, cands):
    """{key: (fn, torch_events)} -> {key: (median seconds per call, iters)}. Each round times one
    batch of every candidate in turn, so clock and power drift during a row affects all alike."""
    setup = {}
    for key, (fn, torch_events) in cands.items():
        ev = ctx.event(torch_events)
        setup[key] = (fn, ev, pilot(fn, ev, ctx.args.iters, ctx.batch_ms), [])
    for _ in range(ctx.reps):
        for fn, ev, iters, samples in setup.values():
            samples.append(batch_seconds(fn, ev, iters))
    return {k: (statistics.median(v[3]), v[2]) for k, v in setup.items()}


def host32(x):
    if x.dtype == gp.bfloat16 or x.dtype == gp.float16:
        x = x.astype(gp.float32)
    return gp.to_numpy(x)


def rotating(pairs, fn):
    """A no-argument call that cycles through the operand pairs (one pair: warm L2)."""
    it = itertools.cycle(pairs)
    return lambda: fn(*next(it))


class Ctx:
    """What every row needs: device, timing settings, optional torch and cuBLASLt."""

    def __init__(self, args, dev, torch, lt_ok, l2_bytes):
        self.args, self.dev, self.torch, self.lt_ok = args, dev, torch, lt_ok
        self.cpu = dev.type == "cpu"
        self.reps = args.reps or (3 if self.cpu else 10)
        self.batch_ms = args.batch_ms or (0.2 if self.cpu else 2.0)
        cold = (1 << 20) if self.cpu else max(COLD_L2_BYTES, 2 * l2_bytes)  # cpu: logic only
        self.cold_bytes = cold if args.cold_l2 else 0
        self.families = [f for f in args.backend_compare.split(",") if f]

    def event(self, torch_events=False):
        if torch_events:
            return lambda: self.torch.cuda.Event(enable_timing=True)
        return lambda: gp.Event(self.dev)


def measure(ctx, section, m, k, n, dt, a32, b32):
    storage, precision = DTYPES[dt]
    A = gp.asarray(a32, device=ctx.dev).astype(getattr(gp, storage))
    if ctx.args.b_layout == "t":
        W = gp.asarray(np.ascontiguousarray(b32.T), device=ctx.dev).astype(getattr(gp, storage))
        B = gp.matrix_transpose(W)
    else:
        B = gp.asarray(b32, device=ctx.dev).astype(getattr(gp, storage))
    copies = min(4096, max(1, math.ceil(ctx.cold_bytes / (A.nbytes + B.nbytes))))
    # Copies keep B's layout (a copy of the transposed view would come back row-major).
    copy_b = (lambda: gp.matrix_transpose(W.copy())) if ctx.args.b_layout == "t" else B.copy
    pairs = [(A, B)] + [(A.copy(), copy_b()) for _ in range(copies - 1)]
    flops, wbytes = 2.0 * m * k * n, float(k * n * A.itemsize)
    row = {"section": section, "m": m, "k": k, "n": n, "dtype": dt, "storage": storage}
    row.update({"precision": precision, "flops": flops, "l2_copies": copies, "iters": {}})

    # float64 reference for a random subset of rows, from the operands as the GPU holds them
    pick = np.random.default_rng([ctx.args.seed, m, k, n, 1])
    rows = np.sort(pick.choice(m, min(m, ctx.args.err_rows), replace=False))
    a64, b64 = host32(A)[rows].astype(np.float64), host32(B).astype(np.float64)
    ref, bound = a64 @ b64, np.abs(a64) @ np.abs(b64) + np.finfo(np.float64).tiny
    del a64, b64

    def err(c_rows):
        r = np.abs(np.asarray(c_rows, np.float64) - ref) / bound
        return float(r.max()), float(r.mean())

    def result(key, errs):
        t, iters = times[key]
        row["iters"][key] = iters
        d = {"ms": t * 1e3, "tflops": flops / t / 1e12, **errs}
        if m <= SKINNY_M:
            d["weight_tbps"] = wbytes / t / 1e12
        return d

    def gp_prepare(backend):
        C = gp.matmul(A, B, precision=precision, backend=backend)
        mx, mean = err(host32(C)[rows])
        del C
        fn = rotating(pairs, lambda a, b: gp.matmul(a, b, precision=precision, backend=backend))
        return fn, {"max_rel_err": mx, "mean_rel_err": mean}

    cands, errs = {}, {}
    fn, errs["ours"] = gp_prepare("auto")
    cands["ours"] = (fn, False)
    row["ours_kernel"] = kernels_launched(
        ctx.dev, lambda: gp.matmul(A, B, precision=precision, backend="auto")
    )
    if ctx.lt_ok:
        try:
            fn, errs["cublaslt"] = gp_prepare("cublaslt")
            cands["cublaslt"] = (fn, False)
        except (NotImplementedError, RuntimeError) as e:
            row["cublaslt_error"] = f"{type(e).__name__}: {e}"
    row["backends"] = {}
    for fam in ctx.families:  # forced kernel families; n/a where one cannot serve the problem
        try:
            fn, errs[fam] = gp_prepare(fam)
            cands[fam] = (fn, False)
        except (NotImplementedError, ValueError) as e:
            row["backends"][fam] = {"status": "n/a", "reason": str(e)[:200]}
    torch = ctx.torch
    old_tf32 = torch.backends.cuda.matmul.allow_tf32 if torch is not None else None
    try:
        if torch is not None:
            torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
            fn, errs["torch"] = torch_prepare(
                torch, storage, len(pairs), a32, b32, rows, err, ctx.args.b_layout == "t"
            )
            cands["torch"] = (fn, True)
        times = interleaved(ctx, cands)
    finally:
        if torch is not None:
            torch.backends.cuda.matmul.allow_tf32 = old_tf32
    row.update({f"ours_{x}": v for x, v in result("ours", errs["ours"]).items()})
    if "cublaslt" in cands:
        row.update({f"cublaslt_{x}": v for x, v in result("cublaslt", errs["cublaslt"]).items()})
        row["ratio_vs_cublaslt"] = row["ours_tflops"] / row["cublaslt_tflops"]
    if "torch" in cands:
        row.update({f"torch_{x}": v for x, v in result("torch", errs["torch"]).items()})
        row["ratio_vs_torch"] = row["ours_tflops"] / row["torch_tflops"]
    for fam in ctx.families:
        if fam in cands:
            row["backends"][fam] = {**result(fam, errs[fam]), "iters": row["iters"].pop(fam)}
    return row


def kernel_counts(dev, fn):
    """{kernel: launches} of one call of `fn` (dispatcher statistics), sorted by name."""
    gp.synchronize(dev)
    gp.reset_dispatch_stats()
    fn()
    gp.synchronize(dev)
    return dict(sorted(gp.dispatch_stats()["per_kernel"].items()))


def kernels_launched(dev, fn):
    """The kernels one call of `fn` launched, shortened for the table:
    "sm90_128x256_c2_kn_bf2_bf2", "cublaslt", "simt_128x128_rr_f4+epilogue_f4_f4"."""
    short = [k.removeprefix("pgk_gemm_").removeprefix("matmul_") for k in kernel_counts(dev, fn)]
    return "+".join(short) or "-"


def torch_prepare(torch, storage, copies, a32, b32, rows, err, b_t=False):
    """torch.matmul on the same values (allow_tf32 is set by the caller): (fn, errors)."""
    tdt = getattr(torch, storage)
    ta, tb = (torch.from_numpy(x).to(tdt).cuda() for x in (a32, b32))
    if b_t:  # same values, K-major: the transposed view of a contiguous (N, K) tensor
        tb = tb.t().contiguous().t()
    tpairs = [(ta, tb)] + [(ta.clone(), tb.clone()) for _ in range(copies - 1)]
    c = torch.matmul(ta, tb)[torch.from_numpy(rows).cuda()]
    mx = err(c.double().cpu().numpy())[0]
    return rotating(tpairs, torch.matmul), {"max_rel_err": mx}


def f(v, spec):
    """format(v, spec), or a '-' of the same width when v is None."""
    return format(v, spec) if v is not None else "-".rjust(int(spec.split(".")[0] or 0))


def shape_name(r):
    return f"{r['m']}^3" if r["section"] == "square" else f"{r['m']}x{r['k']}x{r['n']}"


def header(section, families):
    cols = (
        f"{section + ' (MxKxN)':>18} {'dtype':>5} {'ours TF/s':>9} {'kernel':<22} {'LT TF/s':>8} "
        f"{'torch':>7} {'ours/LT':>7} {'ours err max/mean':>17} {'LT err max':>10} "
        f"{'TB/s ours/LT':>12}"
    )
    return "\n" + cols + "".join(f" {fam:>7}" for fam in families)


def line(r, families):
    g = r.get
    tbps = f"{f(g('ours_weight_tbps'), '.2f')}/{f(g('cublaslt_weight_tbps'), '.2f')}"
    s = (
        f"{shape_name(r):>18} {r['dtype']:>5} {f(g('ours_tflops'), '9.1f')} "
        f"{g('ours_kernel', '-')[:22]:<22} {f(g('cublaslt_tflops'), '8.1f')} "
        f"{f(g('torch_tflops'), '7.1f')} {f(g('ratio_vs_cublaslt'), '7.2f')} "
        f"{f(g('ours_max_rel_err'), '8.1e')}/{f(g('ours_mean_rel_err'), '8.1e')} "
        f"{f(g('cublaslt_max_rel_err'), '10.1e')} {tbps if r['m'] <= SKINNY_M else '-':>12}"
    )
    for fam in families:
        b = r["backends"].get(fam, {})
        s += f" {f(b.get('tflops'), '7.1f') if 'tflops' in b else 'n/a':>7}"
    flag = g("ratio_vs_cublaslt")
    return s + ("  <-- below 0.8 of cuBLASLt" if flag is not None and flag < FLAG_RATIO else "")


def geomean(v):
    return math.exp(statistics.fmean(math.log(x) for x in v)) if v else None


def summarize(results):
    out = {"flag_ratio": FLAG_RATIO, "dtypes": {}, "skinny_bf16_bandwidth": []}
    for dt in DTYPES:
        rs = [r for r in results if r["dtype"] == dt and "ratio_vs_cublaslt" in r]
        if not rs:
            continue

        sq = [r for r in rs if r["section"] == "square"]
        worst = min(rs, key=lambda r: r["ratio_vs_cublaslt"])
        out["dtypes"][dt] = {
            "geomean_ratio_square_1024_2048": geomean(
                [r["ratio_vs_cublaslt"] for r in sq if 1024 <= r["m"] <= 2048]
            ),
            "geomean_ratio_square_4096_8192": geomean(
                [r["ratio_vs_cublaslt"] for r in sq if 4096 <= r["m"] <= 8192]
            ),
            "min_ratio": worst["ratio_vs_cublaslt"],
            "min_ratio_row": f"{worst['section']} {shape_name(worst)}",
            "rows_below_flag": [
                f"{r['section']} {shape_name(r)}" for r in rs if r["ratio_vs_cublaslt"] < FLAG_RATIO
            ],
        }
    for r in results:
        if r["dtype"] == "bf16" and r["m"] <= SKINNY_M:
            keys = ("ours_weight_tbps", "cublaslt_weight_tbps", "torch_weight_tbps")
            out["skinny_bf16_bandwidth"].append(
                {"m": r["m"], "k": r["k"], "n": r["n"], **{x: r.get(x) for x in keys}}
            )
    return out


def print_summary(s):
    print("\n== summary: ours / cuBLASLt (TFLOP/s ratio; > 1 is faster)")
    if not s["dtypes"]:
        print("(no cuBLASLt column: no ratios)")
    else:
        print(f"{'dtype':>5} {'sq 1024-2048':>12} {'sq 4096-8192':>12} {'min':>6}  min row")
    for dt, d in s["dtypes"].items():
        flag = (
            f"  FLAG: {len(d['rows_below_flag'])} rows < {FLAG_RATIO}"
            if d["rows_below_flag"]
            else ""
        )
        print(
            f"{dt:>5} {f(d['geomean_ratio_square_1024_2048'], '12.3f')} "
            f"{f(d['geomean_ratio_square_4096_8192'], '12.3f')} {d['min_ratio']:6.3f}  "
            f"{d['min_ratio_row']}{flag}"
        )
    if s["skinny_bf16_bandwidth"]:
        print("\n== skinny bf16 effective weight bandwidth (TB/s), ours / cuBLASLt / torch")
        for b in s["skinny_bf16_bandwidth"]:
            print(
                f"{b['m']:>5}x{b['k']}x{b['n']:<6} {f(b['ours_weight_tbps'], '6.2f')} / "
                f"{f(b['cublaslt_weight_tbps'], '6.2f')} / {f(b['torch_weight_tbps'], '6.2f')}"
            )


def main():
    args = parse_args()
    dev = gp.Device(args.device) if args.device else gp.default_device()
    cpu = dev.type == "cpu"
    if args.dry_run:  # the CUDA plan unless --device cpu was asked for
        cpu = args.device is not None and cpu
        rows = plan(args, cpu)
        for sec, m, k, n, dt in rows:
            size = (m * k + k * n) * (2 if DTYPES[dt][0] != "float32" else 4)
            print(f"{sec:6s} {m:>5}x{k:>5}x{n:<5} {dt:4s} operands {size / 2**20:8.1f} MiB")
        print(f"{len(rows)} rows on {'cpu (smoke sizes)' if cpu else 'cuda'}")
        return 0
    rows = plan(args, cpu)
    if cpu and args.device is None:
        print("gemm benchmark: no CUDA device (pass --device cpu for a smoke run)", file=sys.stderr)
        return 1
    props, info = gp.device_properties(dev), gp.runtime_info()
    torch = None if cpu or args.no_torch else cuda_torch()
    lt_ok = not cpu and info.get("cublaslt_available", False)
    ctx = Ctx(args, dev, torch, lt_ok, props.get("l2_cache_bytes", 0))
    l2 = f"cold (operands rotated over >= {ctx.cold_bytes >> 20} MiB)" if args.cold_l2 else "warm"
    print(
        f"pygpukit {gp.__version__} on {dev} ({props['name']}); L2 {l2}"
        f"; cuBLASLt {'yes' if lt_ok else 'no'}; torch {torch.__version__ if torch else 'no'}",
        flush=True,
    )

    results, section, host_key, a32, b32 = [], None, None, None, None
    for sec, m, k, n, dt in rows:
        if sec != section:
            section = sec
            print(header(sec, ctx.families), flush=True)
        if host_key != (m, k, n):
            host_key = (m, k, n)
            rng = np.random.default_rng([args.seed, m, k, n])
            a32 = rng.standard_normal((m, k), dtype=np.float32)
            b32 = rng.standard_normal((k, n), dtype=np.float32)
        r = measure(ctx, sec, m, k, n, dt, a32, b32)
        results.append(r)
        print(line(r, ctx.families), flush=True)

    summary = summarize(results)
    print_summary(summary)
    result = {
        "gpu": props["name"],
        "sm": props["sm"],
        "device": str(dev),
        "l2_cache_bytes": props.get("l2_cache_bytes"),
        "versions": {
            "pygpukit": gp.__version__,
            "torch": torch.__version__ if torch else None,
            "cublaslt": info.get("cublaslt_version"),
            "driver": props.get("driver_version"),
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "settings": {
            "sections": sections(args),
            "quick": args.quick,
            "b_layout": args.b_layout,
            "l2": "cold" if args.cold_l2 else "warm",
            "cold_l2_bytes": ctx.cold_bytes or None,
            "iters": args.iters or f"adaptive (batch >= {ctx.batch_ms} ms)",
            "reps": ctx.reps,
            "err_rows": args.err_rows,
            "seed": args.seed,
            "backend_compare": ctx.families,
        },
        "timing": "device events around batches of back-to-back calls, median per call",
        "error": "per element |C - ref| / (|A_row| @ |B|) on a random row subset, float64 ref "
        "from the operands as stored on the device",
        "results": results,
        "summary": summary,
    }
    suffix = ("-quick" if args.quick else "") + ("-cold-l2" if args.cold_l2 else "")
    suffix += "-bt" if args.b_layout == "t" else ""
    write_result(result, args.out, props, "gemm", cuda=not cpu, suffix=suffix)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
