"""pygpukit.torch.patch / unpatch / patched on torch models (CPU tensors on the CPU backend;
CUDA tensors where both run on a GPU): every patched layer against torch's own forward on random
inputs, the fallbacks, and that unpatch restores the very same forwards."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import pygpukit as gp  # noqa: E402
import pygpukit.torch as pgt  # noqa: E402

TOL = {torch.float32: 2e-5, torch.bfloat16: 2e-2, torch.float16: 2e-3}


@pytest.fixture
def device():
    d = gp.default_device()
    return torch.device("cuda", d.index) if d.type == "cuda" else torch.device("cpu")


def close(got, want, dtype):
    got, want = got.float(), want.float()
    scale = max(1.0, float(want.abs().max()))
    assert torch.isfinite(got).all()
    assert float((got - want).abs().max()) <= TOL[dtype] * scale, (got - want).abs().max()


def ours(call, *args):
    """call(*args) and whether pygpukit ran anything for it (its dispatch counters)."""
    gp.reset_dispatch_stats()
    out = call(*args)
    return out, bool(gp.dispatch_stats()["per_kernel"])


def forwards(model):
    """Each module's `forward` instance attribute (or None) and the class's function."""
    return [(m.__dict__.get("forward"), type(m).forward) for m in model.modules()]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(7, 24), (2, 5, 24), (24,)])
def test_linear(device, dtype, bias, shape):
    torch.manual_seed(0)
    lin = nn.Linear(24, 40, bias=bias).to(device, dtype)
    x = torch.randn(shape, device=device, dtype=dtype)
    with torch.no_grad():
        want = lin(x)
        report = pgt.patch(lin)
        assert report.patched["linear"] == ["Linear"]
        got, ran = ours(lin, x)
    assert ran
    assert got.shape == want.shape and got.dtype == dtype
    close(got, want, dtype)


@pytest.mark.parametrize("act", [nn.GELU(), nn.GELU(approximate="tanh"), nn.SiLU(), nn.ReLU()])
def test_sequential_linear_activation_fuses(device, act):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(16, 32), act, nn.Linear(32, 8)).to(device)
    x = torch.randn(9, 16, device=device)
    with torch.no_grad():
        want = model(x)
        report = pgt.patch(model, ops=("linear",))
        got = model(x)
    assert report.fused == [("0", "1")]
    close(got, want, torch.float32)
    h = torch.randn(3, 32, device=device)
    assert model[1](h) is h  # the activation runs in the product's epilogue


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(device, dtype, affine):
    torch.manual_seed(2)
    ln = nn.LayerNorm((6, 10), elementwise_affine=affine).to(device, dtype)
    if affine:
        with torch.no_grad():
            ln.weight.normal_()
            ln.bias.normal_()
    x = torch.randn(3, 4, 6, 10, device=device, dtype=dtype) * 3 + 1
    with torch.no_grad():
        want = ln(x)
        pgt.patch(ln)
        got, ran = ours(ln, x)
    assert ran
    close(got, want, dtype)


@pytest.mark.skipif(not hasattr(nn, "RMSNorm"), reason="torch without nn.RMSNorm")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("eps", [None, 1e-6])
def test_rms_norm(device, dtype, eps):
    """eps=None is torch's default (float32's epsilon, also for bf16 rows)."""
    torch.manual_seed(3)
    rn = nn.RMSNorm(64, eps=eps).to(device, dtype)
    with torch.no_grad():
        rn.weight.normal_()
    x = torch.randn(5, 64, device=device, dtype=dtype) * 0.05  # eps matters at this scale
    with torch.no_grad():
        want = rn(x)
        pgt.patch(rn)
        got, ran = ours(rn, x)
    assert ran
    close(got, want, dtype)


@pytest.mark.parametrize("act", [nn.GELU(), nn.GELU(approximate="tanh"), nn.SiLU()])
def test_activations(device, act):
    x = torch.linspace(-6, 6, 101, device=device).reshape(1, 101)
    with torch.no_grad():
        want = act(x)
        pgt.patch(act)
        got, ran = ours(act, x)
    assert ran
    close(got, want, torch.float32)


class Attention(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.kw)


@pytest.mark.parametrize(
    "case",
    [
        "plain",
        "causal",
        "bool_mask",
        "float_mask",
        "gqa",
        "scale",
        "causal_longer_keys",
        "value_dim",
        "float64_mask",
        "dropout",
    ],
)
def test_sdpa(device, case):
    """Each call against torch's own; the cases torch defines differently (causal with Sq != Sk:
    top-left aligned) or that pygpukit does not take (dropout, a mask of another dtype) must
    keep torch's path, the others must take pygpukit's."""
    torch.manual_seed(4)
    b, hq, hk, sq, sk, d = 2, 4, 4, 33, 33, 64
    kw, mask = {}, None
    if case == "causal":
        kw["is_causal"] = True
    if case == "gqa":
        hk, kw["enable_gqa"] = 2, True
    if case == "scale":
        kw["scale"] = 0.3
    if case == "causal_longer_keys":
        sk, kw["is_causal"] = 50, True
    if case == "dropout":
        kw["dropout_p"] = 0.5
    dv = 40 if case == "value_dim" else d
    q = torch.randn(b, hq, sq, d, device=device)
    k = torch.randn(b, hk, sk, d, device=device)
    v = torch.randn(b, hk, sk, dv, device=device)
    if case == "bool_mask":
        mask = torch.rand(sq, sk, device=device) < 0.7
    if case == "float_mask":
        mask = torch.randn(b, 1, sq, sk, device=device)
    if case == "float64_mask":
        mask = torch.randn(sq, sk, device=device, dtype=torch.float64)
    model = Attention(**kw)
    ours = case not in ("causal_longer_keys", "float64_mask", "dropout")
    with torch.no_grad():
        if case == "float64_mask":  # torch's answer to that mask, an error or a result
            try:
                want = model(q, k, v, mask)
            except RuntimeError:
                want = None
        else:
            want = model(q, k, v, mask)
        with pgt.patched(model) as report:
            assert report.patched["attention"] == ["Attention"]
            gp.reset_dispatch_stats()
            if want is None:
                with pytest.raises(RuntimeError):
                    model(q, k, v, mask)
                return
            torch.manual_seed(6)
            got = model(q, k, v, mask)
            ran = gp.dispatch_stats()["per_kernel"]
    assert bool(ran) == ours, ran
    if case == "dropout":
        assert got.shape == want.shape  # random: only torch's path, checked by `ran`
        return
    close(got, want, torch.float32)


def test_sdpa_swap_is_scoped(device):
    """F.scaled_dot_product_attention is ours only while the patched model runs."""
    original = F.scaled_dot_product_attention
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(F.scaled_dot_product_attention)
            return x

    model = Probe()
    with pgt.patched(model):
        model(torch.ones(1))
        assert F.scaled_dot_product_attention is original
    assert seen[0] is not original
    assert F.scaled_dot_product_attention is original


def test_unpatch_restores_the_same_functions(device):
    model = nn.Sequential(
        nn.Linear(8, 8), nn.SiLU(), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 2)
    ).to(device)
    model[4].forward = model[4].forward  # an instance attribute set before patching stays
    own = model[4].__dict__["forward"]
    before = forwards(model)
    report = pgt.patch(model)
    assert report.count() == 6  # 2 linear, 2 activations (one fused away), norm, attention
    assert forwards(model) != before
    assert pgt.unpatch(model) == 6
    assert forwards(model) == before
    assert model[4].__dict__["forward"] is own
    assert all("_pygpukit_patch" not in m.__dict__ for m in model.modules())
    assert pgt.unpatch(model) == 0


def test_patching_twice_skips_and_says_so(device):
    lin = nn.Linear(4, 4)
    pgt.patch(lin)
    with pytest.warns(UserWarning, match="already patched"):
        report = pgt.patch(lin)
    assert report.count() == 0 and report.skipped


def test_grad_wanted_falls_back(device):
    """With grad mode on and parameters that require grad, torch's path runs (backward works)."""
    torch.manual_seed(5)
    lin = nn.Linear(6, 3).to(device)
    x = torch.randn(4, 6, device=device)
    pgt.patch(lin)
    y, ran = ours(lin, x)
    y.sum().backward()
    assert not ran and lin.weight.grad is not None


def test_unsupported_dtype_is_left_and_reported(device):
    lin = nn.Linear(4, 4).double()
    with pytest.warns(UserWarning, match="left"):
        report = pgt.patch(lin, ops=("linear",))
    assert report.count() == 0 and "float64" in report.skipped[0][1]
    assert "forward" not in lin.__dict__


def test_mismatched_call_falls_back_to_torch(device):
    """A call pygpukit's path does not take (here float64 input to a float32 layer) runs the
    original forward, with torch's own error or result."""
    lin = nn.Linear(4, 4)
    pgt.patch(lin)
    with pytest.raises(RuntimeError):
        lin(torch.ones(2, 4, dtype=torch.float64))
    with torch.no_grad():
        close(
            lin(torch.ones(2, 4)),
            F.linear(torch.ones(2, 4), lin.weight, lin.bias),
            torch.float32,
        )


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown ops"):
        pgt.patch(nn.Linear(2, 2), ops=("conv",))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        pgt.patch(lambda x: x)


def test_bridge_views_and_lazy_negation(device):
    t = torch.arange(12, dtype=torch.float32, device=device).reshape(3, 4)[:, 1:3]
    a = pgt.to_gp(t)
    assert a.shape == (3, 2)
    np.testing.assert_array_equal(gp.to_numpy(a), t.cpu().numpy())
    back = pgt.to_torch(a * 2)
    assert torch.equal(back, t * 2)
    z = torch.tensor([1 + 2j, 3 - 4j], device=device).conj().imag  # the negation bit is set
    np.testing.assert_array_equal(gp.to_numpy(pgt.to_gp(z)), [-2.0, 4.0])


def test_pygpukit_torch_without_torch_says_what_to_install():
    from helpers import run_child

    code = """
    import sys
    sys.modules["torch"] = None  # as if torch were not installed
    import pygpukit
    try:
        import pygpukit.torch
    except ImportError as e:
        assert "pip install pygpukit[torch]" in str(e), e
    else:
        raise AssertionError("imported without torch")
    """
    r = run_child(code)
    assert r.returncode == 0, r.stderr[-2000:]


def test_import_pygpukit_does_not_import_torch():
    from helpers import run_child

    r = run_child("import sys, pygpukit; assert 'torch' not in sys.modules, 'torch imported'")
    assert r.returncode == 0, r.stderr[-2000:]


def test_readme_example():
    from helpers import run_readme_example

    scope = run_readme_example("### PyTorch models")
    assert scope["report"].fused == [("0", "1")]
