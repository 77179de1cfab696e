"""Test configuration: tests run on the default device. With PYGPUKIT_DEVICE=cuda they run on
the GPU; where no GPU exists they are skipped, but on a machine with NVIDIA hardware an
unusable CUDA backend is an error, never a silent skip."""

import os
import shutil
import zlib

import numpy as np
import pytest

import pygpukit as gp


def _gpu_hardware_present():
    return os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is not None


def pytest_collection_modifyitems(config, items):
    want = os.environ.get("PYGPUKIT_DEVICE", "")
    if not want.startswith("cuda"):
        return
    info = gp.runtime_info()
    if info["cuda_available"]:
        return
    if _gpu_hardware_present():
        raise pytest.UsageError(
            f"PYGPUKIT_DEVICE={want} on a machine with NVIDIA hardware, but CUDA is unusable: "
            f"{info['cuda_status']}"
        )
    skip = pytest.mark.skip(reason=f"no CUDA device: {info['cuda_status']}")
    for item in items:
        item.add_marker(skip)


@pytest.fixture
def device():
    return gp.default_device()


@pytest.fixture
def cuda():
    """A CUDA device (the default one when it is a GPU), or the test is skipped."""
    info = gp.runtime_info()
    if not info["cuda_available"]:
        pytest.skip(f"needs a CUDA device: {info['cuda_status']}")
    d = gp.default_device()
    return d if d.type == "cuda" else gp.Device("cuda:0")


@pytest.fixture
def rng(request):
    # A fresh, test-specific seed: reproducible, but different data per test.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
