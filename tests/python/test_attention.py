"""gp.nn.scaled_dot_product_attention on the default device against a float64 reference: torch's
layout and arguments, Sq != Sk, a value head dim other than the query's, grouped- and multi-query
heads, causal (bottom-right aligned) with more and fewer queries than keys, boolean and additive
masks that broadcast, fully masked rows (zeros, as torch), 2-D inputs, empty sequences, long
sequences that run in chunks of query rows, and bad input."""

import os

import numpy as np
import pytest
from helpers import UNIT_ROUNDOFF, host, rand, run_child

import pygpukit as gp

DTYPES = ["float16", "bfloat16", "float32", "float64"]


def f64(a):
    return np.asarray(a).astype(np.float64)


def sdpa_ref(q, k, v, mask=None, causal=False, scale=None, rows=None):
    """float64 attention of q (..., Hq, Sq, E) over k, v (..., Hk, Sk, *) with Hk dividing Hq;
    `rows` restricts the query rows computed."""
    q, k, v = f64(q), f64(k), f64(v)
    hq, hk = q.shape[-3], k.shape[-3]
    if hq != hk:
        k, v = np.repeat(k, hq // hk, axis=-3), np.repeat(v, hq // hk, axis=-3)
    sq, sk = q.shape[-2], k.shape[-2]
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    idx = np.arange(sq) if rows is None else np.asarray(rows)
    s = q[..., idx, :] @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        m = np.broadcast_to(mask, s.shape[:-2] + (sq, sk))[..., idx, :]
        s = np.where(m, s, -np.inf) if m.dtype == bool else s + f64(m)
    if causal:
        s = np.where(np.arange(sk)[None, :] <= idx[:, None] + sk - sq, s, -np.inf)
    mx = s.max(axis=-1, keepdims=True)
    dead = np.isneginf(mx)
    p = np.exp(s - np.where(dead, 0, mx))
    p = np.where(dead, 0, p / np.where(dead, 1, p.sum(axis=-1, keepdims=True)))
    return p @ v


def check(got, ref, dtype, vmax):
    """Within the inputs' rounding of the probabilities and the product with v (16-bit: P
    rounded to the dtype), relative to the largest |v|."""
    assert str(got.dtype) == dtype
    g = f64(host(got))
    assert g.shape == ref.shape, (g.shape, ref.shape)
    u = UNIT_ROUNDOFF[dtype]
    tol = (8 * u + (2**-20 if dtype != "float64" else 2**-45)) * vmax + 4 * u * np.abs(ref)
    bad = ~(np.abs(g - ref) <= tol)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} off: got {g[bad][0]} want {ref[bad][0]}"


def arrays(rng, dtype, device, *shapes, scale=1.0):
    host_arrays = [rand(rng, s, dtype, scale=scale) for s in shapes]
    return host_arrays, [gp.asarray(a, device=device) for a in host_arrays]


@pytest.mark.parametrize("dtype", DTYPES)
def test_sq_ne_sk_and_value_dim(rng, device, dtype):
    (q, k, v), (gq, gk, gv) = arrays(
        rng, dtype, device, (2, 3, 33, 64), (2, 3, 47, 64), (2, 3, 47, 32)
    )
    y = gp.nn.scaled_dot_product_attention(gq, gk, gv)
    assert y.shape == (2, 3, 33, 32)
    check(y, sdpa_ref(q, k, v), dtype, np.abs(f64(v)).max())
    y = gp.nn.scaled_dot_product_attention(gq, gk, gv, scale=0.05)
    check(y, sdpa_ref(q, k, v, scale=0.05), dtype, np.abs(f64(v)).max())


@pytest.mark.parametrize("hk", [2, 1])  # grouped-query, multi-query
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_query_heads(rng, device, hk, causal):
    (q, k, v), (gq, gk, gv) = arrays(
        rng, "bfloat16", device, (2, 8, 20, 64), (2, hk, 20, 64), (2, hk, 20, 64)
    )
    y = gp.nn.scaled_dot_product_attention(gq, gk, gv, is_causal=causal, enable_gqa=True)
    check(y, sdpa_ref(q, k, v, causal=causal), "bfloat16", np.abs(f64(v)).max())


@pytest.mark.parametrize("sq, sk", [(1, 20), (7, 20), (20, 20), (20, 7)])
def test_causal_bottom_right(rng, device, sq, sk):
    (q, k, v), (gq, gk, gv) = arrays(rng, "float32", device, (2, sq, 16), (2, sk, 16), (2, sk, 16))
    y = gp.nn.scaled_dot_product_attention(gq[None], gk[None], gv[None], is_causal=True)
    ref = sdpa_ref(q[None], k[None], v[None], causal=True)
    check(y, ref, "float32", np.abs(v).max())
    if sq > sk:  # the first sq - sk rows see no key: zeros
        assert not np.any(host(y)[..., : sq - sk, :])


def test_masks(rng, device):
    (q, k, v), (gq, gk, gv) = arrays(
        rng, "float16", device, (2, 4, 9, 32), (2, 4, 13, 32), (2, 4, 13, 32)
    )
    vmax = np.abs(f64(v)).max()
    keep = rng.random((9, 13)) < 0.7
    keep[3] = False  # a fully masked row: zeros
    y = gp.nn.scaled_dot_product_attention(gq, gk, gv, gp.asarray(keep, device=device))
    check(y, sdpa_ref(q, k, v, keep), "float16", vmax)
    assert not np.any(host(y)[:, :, 3])
    per_batch = rng.random((2, 1, 9, 13)) < 0.5  # broadcast over heads
    y = gp.nn.scaled_dot_product_attention(gq, gk, gv, gp.asarray(per_batch, device=device))
    check(y, sdpa_ref(q, k, v, per_batch), "float16", vmax)
    bias = (rng.standard_normal((4, 1, 13)) * 2).astype(np.float32)  # additive, per head and key
    y = gp.nn.scaled_dot_product_attention(gq, gk, gv, gp.asarray(bias, device=device))
    check(y, sdpa_ref(q, k, v, bias), "float16", vmax)
    # Grouped heads with a per-head mask: the mask's head axis splits like the query heads.
    g2k, g2v = gk[:, :2], gv[:, :2]
    per_head = rng.random((4, 9, 13)) < 0.6
    y = gp.nn.scaled_dot_product_attention(
        gq, g2k, g2v, gp.asarray(per_head, device=device), enable_gqa=True
    )
    check(y, sdpa_ref(q, k[:, :2], v[:, :2], per_head), "float16", vmax)


def test_two_dims_empty_and_long(rng, device):
    (q, k, v), (gq, gk, gv) = arrays(rng, "float32", device, (5, 8), (6, 8), (6, 3))
    y = gp.nn.scaled_dot_product_attention(gq, gk, gv)
    assert y.shape == (5, 3)
    check(y, sdpa_ref(q[None], k[None], v[None])[0], "float32", np.abs(v).max())
    e = gp.nn.scaled_dot_product_attention(gq[:0], gk, gv)
    assert e.shape == (0, 3)
    z = gp.nn.scaled_dot_product_attention(gq, gk[:0], gv[:0])  # no keys: zeros
    assert z.shape == (5, 3) and not np.any(host(z))


def test_query_rows_in_chunks():
    """Scores past the chunk budget (shrunk to 1000 floats in a child process): query rows in
    chunks, with a causal mask built per chunk, a sliced per-row mask, folded grouped heads."""
    code = """
        import numpy as np, pygpukit as gp, sys
        sys.path.insert(0, "tests/python")
        from test_attention import sdpa_ref
        rng = np.random.default_rng(0)
        q = rng.standard_normal((2, 4, 37, 16)).astype(np.float32)
        k = rng.standard_normal((2, 2, 45, 16)).astype(np.float32)
        v = rng.standard_normal((2, 2, 45, 8)).astype(np.float32)
        m = rng.random((2, 1, 37, 45)) < 0.7
        g = [gp.asarray(a) for a in (q, k, v)]
        sdpa = gp.nn.scaled_dot_product_attention
        err = lambda got, want: np.abs(gp.to_numpy(got) - want).max()
        errs = [
            err(sdpa(*g, is_causal=c, enable_gqa=True), sdpa_ref(q, k, v, causal=c))
            for c in (False, True)
        ]
        errs.append(err(sdpa(*g, gp.asarray(m), enable_gqa=True), sdpa_ref(q, k, v, m)))
        print(max(errs))
    """
    proc = run_child(code, env={"PYGPUKIT_ATTENTION_SCORES": "1000"})
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout.strip()) < 1e-5, proc.stdout


def test_bad_input(device):
    z = lambda *s, dt=np.float32: gp.asarray(np.zeros(s, dt), device=device)  # noqa: E731
    q, k, v = z(1, 4, 5, 8), z(1, 4, 6, 8), z(1, 4, 6, 8)
    sdpa = gp.nn.scaled_dot_product_attention
    with pytest.raises(
        TypeError, match="scaled_dot_product_attention: q, k and v must have one dtype"
    ):
        sdpa(q, k.astype(gp.float16), v)
    with pytest.raises(TypeError, match="unsupported dtype int32"):
        sdpa(*(a.astype(gp.int32) for a in (q, k, v)))
    with pytest.raises(ValueError, match="4 query heads and 2 key / value heads .*enable_gqa"):
        sdpa(q, z(1, 2, 6, 8), z(1, 2, 6, 8))
    with pytest.raises(ValueError, match="4 query heads and 3 key / value heads .*multiple"):
        sdpa(q, z(1, 3, 6, 8), z(1, 3, 6, 8), enable_gqa=True)
    with pytest.raises(ValueError, match="q's head dim E"):
        sdpa(q, z(1, 4, 6, 4), v)
    with pytest.raises(ValueError, match=r"attn_mask of shape \(5, 7\) does not broadcast"):
        sdpa(q, k, v, z(5, 7, dt=bool))
    with pytest.raises(ValueError, match="attn_mask or is_causal, not both"):
        sdpa(q, k, v, z(5, 6, dt=bool), is_causal=True)
    with pytest.raises(ValueError, match="inference only, dropout_p must be 0"):
        sdpa(q, k, v, dropout_p=0.1)
    with pytest.raises(ValueError, match="same batch dims"):
        sdpa(q, z(2, 4, 6, 8), z(2, 4, 6, 8))
    with pytest.raises(TypeError, match="attn_mask must be bool or floating"):
        sdpa(q, k, v, z(5, 6, dt=np.int32))


FUSED_CASES = {  # name -> (B, Hq, Hk, Sq, Sk, causal, mask)
    "plain": (2, 4, 4, 100, 130, False, None),
    "causal": (1, 4, 2, 130, 130, True, None),
    "causal_longer_keys": (2, 2, 1, 70, 200, True, None),
    "decode": (3, 8, 2, 1, 333, True, None),
    "bool_mask": (2, 2, 2, 65, 77, False, "bool"),
    "float_mask": (1, 4, 4, 33, 64, False, "float"),
    "grouped_per_head_mask": (2, 6, 2, 50, 70, False, "per_head"),  # packed rows of 3 heads
    "grouped_causal_prefill": (1, 8, 2, 40, 40, True, None),  # tiles across head boundaries
    # One sequence, one KV head, a long cache: few CTAs, so the keys split across SMs (and a
    # combine kernel merges the splits).
    "split_kv_decode": (1, 4, 1, 1, 5000, False, None),
    "split_kv_masked": (1, 2, 1, 3, 2100, False, "float"),
    # Hopper's kernel (128-row blocks, 128-key tiles): several blocks with a tail, causal tiles
    # skipped per block, rows that see no key (Sq > Sk, causal), grouped heads.
    "long_causal": (1, 2, 1, 300, 300, True, None),
    "causal_fewer_keys": (1, 2, 2, 200, 100, True, None),
    "grouped_prefill": (2, 8, 2, 257, 300, False, None),
    # More work items (128-row block, head, sequence) than an H200 has SMs: the persistent
    # Hopper kernel's CTAs take several each, with different key counts when causal.
    "many_blocks": (3, 48, 8, 300, 300, False, None),
    "many_blocks_causal": (2, 40, 8, 500, 520, True, None),
}


def fused_kernel(device, sq, mask_kind):
    """The fused kernel expected on `device`: Hopper's for unmasked prefill (64+ query rows)
    on SM 9.0 with the sm_90a kernels built, unless PYGPUKIT_ATTENTION_KERNEL=sm80; else the
    SM80 one."""
    cc = tuple(gp.device_properties(device)["compute_capability"])
    hopper = cc == (9, 0) and "90a" in gp.runtime_info()["kernel_archs"]
    forced = os.environ.get("PYGPUKIT_ATTENTION_KERNEL", "").startswith("sm80")
    if hopper and not forced and mask_kind is None and sq >= 64:
        return "pgk_attn_sm90"
    return "pgk_attn_sm80"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("case", sorted(FUSED_CASES))
def test_fused_kernel_shapes(rng, device, dtype, d, case):
    """The shapes the fused CUDA kernel takes (16-bit, head dim 64 / 128, 4-D): tails in both
    sequences, causal with Sq < Sk, decode, masks; on CUDA SM 8.0+ the fused kernel must run."""
    b, hq, hk, sq, sk, causal, mask_kind = FUSED_CASES[case]
    (q, k, v), (gq, gk, gv) = arrays(
        rng, dtype, device, (b, hq, sq, d), (b, hk, sk, d), (b, hk, sk, d)
    )
    mask = None
    if mask_kind == "bool":
        mask = rng.random((b, 1, sq, sk)) < 0.6
        mask[0, 0, 5] = False  # a fully masked row
    elif mask_kind == "float":
        mask = (rng.standard_normal((sq, sk)) * 2).astype(np.float32)
    elif mask_kind == "per_head":
        mask = rng.random((b, hq, sq, sk)) < 0.5
    gmask = None if mask is None else gp.asarray(mask, device=device)
    gp.reset_dispatch_stats()
    y = gp.nn.scaled_dot_product_attention(gq, gk, gv, gmask, is_causal=causal, enable_gqa=True)
    ran = set(gp.dispatch_stats()["per_kernel"])
    check(y, sdpa_ref(q, k, v, mask, causal), dtype, np.abs(f64(v)).max())
    if device.type == "cuda" and gp.device_properties(device)["compute_capability"][0] >= 8:
        kernel = fused_kernel(device, sq, mask_kind)
        assert any(n.startswith(kernel) for n in ran), ran
        if case.startswith("split_kv"):
            assert any(n.startswith("pgk_attn_combine") for n in ran), ran


@pytest.mark.parametrize("forced", ["sm80", "sm80s2", "sm90s", "sm90pp", "sm90np"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize(
    "case", ["plain", "long_causal", "causal_fewer_keys", "grouped_prefill", "many_blocks_causal"]
)
def test_forced_kernel_on_prefill(rng, device, monkeypatch, forced, d, case):
    """PYGPUKIT_ATTENTION_KERNEL=sm80 keeps prefill on the SM80 kernel (on Hopper too), "sm80s2"
    on its two-stage form; "sm90s" and "sm90pp" run the Hopper kernel's serial and ping-pong
    variants and "sm90np" launches it one CTA per work item instead of persistent (where the
    Hopper kernel serves); the same values."""
    monkeypatch.setenv("PYGPUKIT_ATTENTION_KERNEL", forced)
    b, hq, hk, sq, sk, causal, _ = FUSED_CASES[case]
    (q, k, v), (gq, gk, gv) = arrays(
        rng, "bfloat16", device, (b, hq, sq, d), (b, hk, sk, d), (b, hk, sk, d)
    )
    gp.reset_dispatch_stats()
    y = gp.nn.scaled_dot_product_attention(gq, gk, gv, is_causal=causal, enable_gqa=True)
    ran = set(gp.dispatch_stats()["per_kernel"])
    check(y, sdpa_ref(q, k, v, None, causal), "bfloat16", np.abs(f64(v)).max())
    if device.type == "cuda" and gp.device_properties(device)["compute_capability"][0] >= 8:
        kernel = fused_kernel(device, sq, None)
        if forced in ("sm90s", "sm90pp") and kernel == "pgk_attn_sm90":
            kernel = f"pgk_attn_{forced}"
        assert any(n.startswith(kernel) for n in ran), ran
        if forced == "sm80s2":
            assert not any(n.endswith("_s3") for n in ran), ran


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_finfo_min_padding_mask(rng, device, dtype):
    """Hugging Face pads with finfo(float32).min, not -inf: a row masked that way everywhere has
    equal finite scores, so its output is the mean of v (as torch), not zeros; -inf stays
    exact (a bool mask's fully masked row gives zeros)."""
    (q, k, v), (gq, gk, gv) = arrays(
        rng, dtype, device, (1, 2, 6, 64), (1, 2, 9, 64), (1, 2, 9, 64)
    )
    m = np.zeros((6, 9), np.float32)
    m[:, 7:] = np.finfo(np.float32).min  # padding keys
    m[2] = np.finfo(np.float32).min  # a row with every key "masked"
    y = host(gp.nn.scaled_dot_product_attention(gq, gk, gv, gp.asarray(m, device=device)))
    np.testing.assert_allclose(
        f64(y[:, :, 2]), np.broadcast_to(f64(v).mean(axis=2), (1, 2, 64)), rtol=0, atol=0.02
    )
    ref = sdpa_ref(q, k, v, np.where(m < 0, -np.inf, 0.0))  # the other rows: as -inf
    rows = [0, 1, 3, 4, 5]
    np.testing.assert_allclose(f64(y[:, :, rows]), ref[:, :, rows], rtol=0, atol=0.02)


@pytest.mark.parametrize("dtype, d", [("bfloat16", 16), ("float32", 16), ("bfloat16", 64)])
def test_paged_cache_append_and_attention(rng, device, dtype, d):
    """A paged KV cache: three sequences of different lengths in shuffled blocks of one cache,
    prompts appended, then a decode token each; attention over the blocks against the float64
    reference of each sequence's contiguous keys."""
    nb, hk, bs, hq = 12, 2, 4, 4  # d 64 bf16: the fused kernel reads the blocks on SM 8.0+
    lens = [7, 1, 10]  # prompt lengths
    perm = rng.permutation(nb)
    table = np.array([perm[0:4], perm[4:8], perm[8:12]], np.int32)  # 4 blocks = 16 positions
    kc = gp.zeros((nb, hk, bs, d), dtype=getattr(gp, dtype), device=device)
    vc = gp.zeros((nb, hk, bs, d), dtype=getattr(gp, dtype), device=device)
    gtable = gp.asarray(table, device=device)
    keys = [rand(rng, (hk, n + 1, d), dtype, scale=1.0) for n in lens]  # prompt + one token
    vals = [rand(rng, (hk, n + 1, d), dtype, scale=1.0) for n in lens]
    # Prompts: one append per sequence (different T), then the decode tokens in one call.
    for b, n in enumerate(lens):
        one = gp.asarray(np.array([0]), device=device)
        sub = gp.asarray(table[b : b + 1], device=device)
        k1 = gp.asarray(keys[b][None, :, :n], device=device)
        v1 = gp.asarray(vals[b][None, :, :n], device=device)
        gp.nn.paged_kv_append(kc, vc, k1, v1, sub, one)
    kt = gp.asarray(np.stack([k[:, -1:] for k in keys]), device=device)  # (B, Hk, 1, D)
    vt = gp.asarray(np.stack([v[:, -1:] for v in vals]), device=device)
    gp.nn.paged_kv_append(kc, vc, kt, vt, gtable, gp.asarray(np.array(lens), device=device))
    total = gp.asarray(np.array(lens) + 1, device=device)
    q = rand(rng, (3, hq, 1, d), dtype, scale=1.0)
    gp.reset_dispatch_stats()
    y = gp.nn.paged_attention(gp.asarray(q, device=device), kc, vc, gtable, total)
    ran = set(gp.dispatch_stats()["per_kernel"])
    if d == 64 and device.type == "cuda":
        if gp.device_properties(device)["compute_capability"][0] >= 8:
            assert any(n.startswith("pgk_attn_sm80") for n in ran), ran
    for b in range(3):
        ref = sdpa_ref(q[b : b + 1], keys[b][None], vals[b][None])
        check(y[b : b + 1], ref, dtype, np.abs(f64(vals[b])).max())
    # A chunk of two query tokens at the end of sequence 2, causal inside the chunk.
    q2 = rand(rng, (3, hq, 2, d), dtype, scale=1.0)
    y2 = gp.nn.paged_attention(gp.asarray(q2, device=device), kc, vc, gtable, total)
    ref = sdpa_ref(q2[2:3], keys[2][None], vals[2][None], causal=True)
    check(y2[2:3], ref, dtype, np.abs(f64(vals[2])).max())


def test_paged_bad_input(device):
    z = lambda *s, dt=np.float32: gp.asarray(np.zeros(s, dt), device=device)  # noqa: E731
    kc, vc, table = z(4, 2, 4, 8), z(4, 2, 4, 8), z(2, 2, dt=np.int32)
    with pytest.raises(ValueError, match="paged_kv_append: k and v must be"):
        gp.nn.paged_kv_append(kc, vc, z(2, 3, 1, 8), z(2, 3, 1, 8), table, z(2, dt=np.int64))
    with pytest.raises(IndexError):  # position 8 is past a table of 2 blocks of 4
        gp.nn.paged_kv_append(
            kc, vc, z(2, 2, 1, 8), z(2, 2, 1, 8), table, gp.asarray(np.array([8, 0]), device=device)
        )
    with pytest.raises(ValueError, match="paged_attention: seq_lens must be 1-D integers"):
        gp.nn.paged_attention(z(2, 4, 1, 8), kc, vc, table, z(3, dt=np.int64))
    with pytest.raises(ValueError, match="block_table must be a 2-D integer array"):
        gp.nn.paged_attention(z(2, 4, 1, 8), kc, vc, z(2, 2), z(2, dt=np.int64))
    bad = gp.asarray(np.array([[0, 9], [1, 2]], np.int32), device=device)  # block 9 of 4
    lens = gp.asarray(np.array([6, 3]), device=device)
    with pytest.raises(IndexError, match="paged_attention: block id 9 is out of range"):
        gp.nn.paged_attention(z(2, 4, 1, 8), kc, vc, bad, lens)
    # Entries past a sequence's length are never read (nor checked).
    short = gp.asarray(np.array([3, 3]), device=device)
    assert gp.nn.paged_attention(z(2, 4, 1, 8), kc, vc, bad, short).shape == (2, 4, 1, 8)
