"""gp.Event: recording on the device's stream, completion, timing and misuse."""

import numpy as np
import pytest

import pygpukit as gp


def test_event_times_queued_work(rng):
    a = gp.asarray(rng.standard_normal((256, 256)).astype(np.float32))
    start, end = gp.Event(), gp.Event()
    assert start.device == gp.default_device()
    assert start.query()  # never recorded: complete
    start.record()
    for _ in range(5):
        c = a @ a
    end.record()
    end.synchronize()
    assert end.query()
    ms = start.elapsed_time(end)
    assert 0.0 <= ms < 60_000.0
    # The work before the event has finished: its result is readable and right.
    ref = gp.to_numpy(a).astype(np.float64) @ gp.to_numpy(a).astype(np.float64)
    np.testing.assert_allclose(gp.to_numpy(c), ref, rtol=1e-4, atol=1e-3)


def test_event_rerecord_measures_the_latest_interval(rng):
    start, end = gp.Event(), gp.Event()
    start.record()
    end.record()
    first = start.elapsed_time(end)
    x = gp.asarray(rng.standard_normal((512, 512)).astype(np.float32))
    start.record()
    for _ in range(3):
        x = x @ x * 0.01
    end.record()
    assert start.elapsed_time(end) >= 0.0
    assert first >= 0.0


def test_event_misuse_is_a_clear_error():
    e = gp.Event()
    with pytest.raises(ValueError, match="recorded"):
        e.elapsed_time(gp.Event())
    plain, other = gp.Event(timing=False), gp.Event()
    plain.record()
    other.record()
    with pytest.raises(ValueError, match="timing=True"):
        plain.elapsed_time(other)
    with pytest.raises(ValueError, match="device"):
        gp.Event(device="tpu")
    with pytest.raises(TypeError):
        gp.Event(device=3)


def test_event_on_every_device():
    for d in gp.devices():
        s, e = gp.Event(device=d), gp.Event(device=d)
        s.record()
        gp.ones((64,), device=d) + 1
        e.record()
        assert s.elapsed_time(e) >= 0.0
        assert e.device == d
    if len(gp.devices()) > 1:
        a, b = gp.Event(device=gp.devices()[0]), gp.Event(device="cpu")
        a.record()
        b.record()
        with pytest.raises(ValueError, match="events are on"):
            a.elapsed_time(b)


def test_elapsed_time_of_an_event_with_itself_is_zero():
    e = gp.Event()
    e.record()
    assert e.elapsed_time(e) == 0.0
