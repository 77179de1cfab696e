"""The README demo: a matrix product on the default device (GPU when present, else CPU)."""

import numpy as np

import pygpukit as gp

A = gp.asarray(np.random.rand(512, 256).astype(np.float32))
B = gp.ones((256, 128))
C = A @ B
print(C.shape, C.dtype, C.device)
print(C[:2, :3])
print(gp.to_numpy(C).sum())
