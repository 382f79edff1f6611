"""The two host-call shortcuts: the memoized repeated call (functional's fast path) and the
pool of result blocks (_hostpool). Each must give exactly what the general path gives."""
import gc

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import clnorm

from conftest import assert_close, to64


def _fresh_context():
    return clnorm.Context(None)


def _memoized(ctx):
    """The context's memoized calls (not the signatures marked for the general path)."""
    return [v for v in ctx.fast_calls.values() if v is not clnorm.functional.GENERAL]


def test_repeated_calls_use_the_new_data_each_time():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(768).astype(np.float32)
    b = rng.standard_normal(768).astype(np.float32)
    with _fresh_context() as ctx:
        for i in range(4):
            x = rng.standard_normal((3, 768)).astype(np.float32) * (i + 1) + i
            y = clnorm.layer_norm(x, (768,), w, b)
            ref = F.layer_norm(torch.from_numpy(x).double(), (768,), torch.from_numpy(w).double(),
                               torch.from_numpy(b).double())
            assert_close(y, ref, "float32", "call %d" % i)
        assert len(_memoized(ctx)) == 1  # the first call remembered it, the others used it
        ctx.close()


def test_a_converted_weight_is_not_memoized():
    # A float64 weight beside float32 x is converted on every call: a remembered pointer
    # would be the caller's float64 array, read as float32.
    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    w = np.linspace(0.5, 2.0, 64)  # float64
    with _fresh_context() as ctx:
        for _ in range(3):
            y = clnorm.layer_norm(x, 64, w)
            ref = F.layer_norm(torch.from_numpy(x).double(), (64,), torch.from_numpy(w))
            assert_close(y, ref, "float32", "float64 weight")
        assert not _memoized(ctx)
        # the signature is marked for the general path: its next calls do not try again
        assert list(ctx.fast_calls.values()) == [clnorm.functional.GENERAL]
        ctx.close()


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_a_copied_x_is_not_memoized(kind):
    # x in a layout the library cannot read in place (rows of one column each of a
    # transposed matrix; a sample's spatial dims transposed) is copied to a contiguous array
    # first: the plan made for that copy must not be remembered under the caller's layout,
    # whose next call would then be read as if it were contiguous (it was, before 2026-12-03).
    rng = np.random.default_rng(5)
    xr = rng.standard_normal((40, 6)).astype(np.float32).T
    xg = rng.standard_normal((2, 8, 5, 3)).astype(np.float32).transpose(0, 1, 3, 2)
    if kind == "torch":
        xr, xg = torch.from_numpy(xr), torch.from_numpy(xg)
    ref_r = F.layer_norm(torch.as_tensor(np.ascontiguousarray(xr)).double(), (40,))
    ref_g = F.group_norm(torch.as_tensor(np.ascontiguousarray(xg)).double(), 4)
    with _fresh_context() as ctx:
        for i in range(3):
            assert_close(clnorm.layer_norm(xr, 40), ref_r, "float32", "rows, call %d" % i)
            assert_close(clnorm.group_norm(xg, 4), ref_g, "float32", "groups, call %d" % i)
        # layer_norm's signature marked for the general path; group_norm does not memoize
        # an x that is not C-contiguous, nor look it up
        assert list(ctx.fast_calls.values()) == [clnorm.functional.GENERAL]
        ctx.close()


def test_repeated_group_norm_calls():
    # GroupNorm's repeated calls take the shortcut too, keyed by the groups, the layout and
    # the SiLU: each combination its own entry, each call on its own data.
    rng = np.random.default_rng(6)
    w = rng.standard_normal(8).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    with _fresh_context() as ctx:
        for i in range(3):
            x = rng.standard_normal((2, 8, 5, 3)).astype(np.float32) * (i + 1) + i
            ref = F.group_norm(torch.from_numpy(x).double(), 4, torch.from_numpy(w).double(),
                               torch.from_numpy(b).double())
            xl = x.transpose(0, 2, 3, 1).copy()
            assert_close(clnorm.group_norm(x, 4, w, b), ref, "float32", "nchw %d" % i)
            assert_close(clnorm.group_norm(x, 2, w, b),
                         F.group_norm(torch.from_numpy(x).double(), 2,
                                      torch.from_numpy(w).double(),
                                      torch.from_numpy(b).double()), "float32", "G = 2 %d" % i)
            assert_close(clnorm.group_norm(x, 4, w, b, silu=True), F.silu(ref), "float32",
                         "silu %d" % i)
            y = np.empty_like(xl)
            assert clnorm.group_norm(xl, 4, w, b, channels_last=True, out=y) is y
            assert_close(y, ref.permute(0, 2, 3, 1), "float32", "nhwc out= %d" % i)
            # a torch channels_last tensor: its result channels-last too, as on the general
            # path; with out= it takes the general path every call
            xt = torch.from_numpy(x).contiguous(memory_format=torch.channels_last)
            yt = clnorm.group_norm(xt, 4, torch.from_numpy(w), torch.from_numpy(b))
            assert yt.is_contiguous(memory_format=torch.channels_last)
            assert_close(yt, ref, "float32", "channels_last tensor %d" % i)
            yo = torch.empty_like(xt)
            assert clnorm.group_norm(xt, 4, out=yo) is yo
            assert_close(yo, F.group_norm(to64(xt), 4), "float32", "channels_last out= %d" % i)
        assert len(_memoized(ctx)) == 5
        with pytest.raises(ValueError, match="num_groups must be a positive int"):
            clnorm.group_norm(x, 4.0, w, b)  # not taken for the remembered G = 4
        ctx.close()


def test_out_and_in_place_through_the_shortcut():
    rng = np.random.default_rng(2)
    with _fresh_context():
        for _ in range(3):
            x = rng.standard_normal((4, 96)).astype(np.float32)
            ref = F.layer_norm(torch.from_numpy(x).double(), (96,))
            y = np.empty_like(x)
            assert clnorm.layer_norm(x, 96, out=y) is y
            assert_close(y, ref, "float32", "out=")
            assert clnorm.layer_norm(x, 96, out=x) is x
            assert_close(x, ref, "float32", "in place")


def test_torch_tensors_that_need_gradients_take_the_general_path():
    x = torch.randn(2, 32, dtype=torch.float64, requires_grad=True)
    with _fresh_context() as ctx:
        for _ in range(2):
            y = clnorm.layer_norm(x, (32,))
            assert y.requires_grad
        assert not _memoized(ctx)
        y.sum().backward()
        assert x.grad is not None
        ctx.close()


def test_errors_are_the_same_after_a_remembered_call():
    x = np.ones((2, 16), np.float32)
    with _fresh_context():
        clnorm.layer_norm(x, 16)
        with pytest.raises(ValueError, match="normalized_shape"):
            clnorm.layer_norm(x, 8)
        with pytest.raises(ValueError, match="weight must have shape"):
            clnorm.layer_norm(x, 16, np.ones(8, np.float32))


def test_closing_a_context_forgets_its_calls():
    ctx = _fresh_context()
    with ctx:
        clnorm.layer_norm(np.ones((1, 8), np.float32), 8)
    assert ctx.fast_calls
    ctx.close()
    assert not ctx.fast_calls


def test_large_results_reuse_a_dead_result_block():
    x = np.random.default_rng(3).standard_normal((256, 512)).astype(np.float32)  # 512 KiB
    ref = F.layer_norm(torch.from_numpy(x).double(), (512,))
    y = clnorm.layer_norm(x, 512)
    assert y.ctypes.data % 4096 == 0
    address = y.ctypes.data
    view = y[7:]
    del y
    gc.collect()
    y2 = clnorm.layer_norm(x, 512)  # the view keeps the first block alive: a new one
    assert y2.ctypes.data != address
    assert_close(view, ref[7:], "float32", "a view of a result while results are made")
    del view
    gc.collect()
    y3 = clnorm.layer_norm(x, 512)  # now the first block is free again, and taken
    assert y3.ctypes.data == address
    assert_close(y2, ref, "float32", "second result")
    assert_close(y3, ref, "float32", "a result in a reused block")
    t = clnorm.layer_norm(torch.from_numpy(x).to(torch.bfloat16), (512,))
    assert t.dtype == torch.bfloat16 and t.data_ptr() % 4096 == 0
    assert_close(t, ref, "bfloat16", "torch result in a pooled block")


def test_the_pool_keeps_at_most_its_limit(monkeypatch):
    from clnorm import _hostpool

    pool = _hostpool.HostPool(np)
    monkeypatch.setattr(_hostpool, "IDLE_LIMIT", 3 << 20)
    blocks = [pool.buffer(1 << 20) for _ in range(5)]
    del blocks
    gc.collect()
    assert pool.idle_bytes() == 3 << 20
