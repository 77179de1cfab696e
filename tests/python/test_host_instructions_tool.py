"""The null CUDA driver behind benchmarks/host_instructions.py keeps up with the driver table:
every entry point core/cuda/driver_api.h resolves is one it exports, and it compiles."""

import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER_API = os.path.join(ROOT, "native", "core", "cuda", "driver_api.h")
NULL_DRIVER = os.path.join(ROOT, "benchmarks", "tools", "null_cuda_driver.cc")


def test_the_null_driver_exports_every_entry_point_the_runtime_resolves():
    api = open(DRIVER_API).read()
    table = api[api.index("#define PGK_DRIVER_FUNCTIONS(X)") :]
    table = table[: table.index("\n\n")]
    wanted = set(re.findall(r"X\((cu\w+)\)", table))
    assert len(wanted) > 30, wanted
    exported = set(re.findall(r'\{"(cu\w+)",', open(NULL_DRIVER).read()))
    assert wanted - exported == set()


def test_the_null_driver_compiles(tmp_path):
    cxx = os.environ.get("CXX", "g++")
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if shutil.which(cxx) is None or not os.path.exists(os.path.join(cuda, "include", "cuda.h")):
        pytest.skip("needs a C++ compiler and the CUDA headers")
    out = tmp_path / "libcuda.so.1"
    subprocess.run(
        [cxx, "-O1", "-shared", "-fPIC", f"-I{cuda}/include", "-o", str(out), NULL_DRIVER],
        check=True,
    )
    assert out.stat().st_size > 0
