"""Row-kernel launches for Nsight Compute (run by scripts/gpu.sh profile-nn): softmax and
rms_norm over bf16 and float32 rows of 1024 and 4096 columns (2^26 elements each), three calls
of each, so that ncu's throughput, occupancy and stall reasons show what bounds the rows that
stay below torch.
    ncu --clock-control none -k regex:pgk_nn_rows python3 scripts/nn_profile.py
"""

import pygpukit as gp


def main():
    rng = gp.random.default_rng(0)
    for dtype in (gp.bfloat16, gp.float32):
        for cols in (1024, 4096):
            x = rng.normal(0.0, 1.0, ((1 << 26) // cols, cols), dtype=gp.float32).astype(dtype)
            w = rng.normal(0.0, 1.0, (cols,), dtype=gp.float32).astype(dtype)
            for _ in range(3):
                y = gp.nn.softmax(x)
                z = gp.nn.rms_norm(x, w)
            gp.synchronize()
            print(
                dtype,
                cols,
                float(gp.to_numpy(y[0, :1].astype(gp.float32))[0]),
                float(gp.to_numpy(z[0, :1].astype(gp.float32))[0]),
            )


if __name__ == "__main__":
    main()
