"""Bad arguments raise clear errors: TypeError for what clnorm does not take, ValueError for
shapes and values (the library's own sentence when it is the one refusing)."""
import numpy as np
import pytest
import torch

import clnorm


def test_unsupported_inputs():
    with pytest.raises(TypeError, match="NumPy array, a torch CPU tensor or a pyopencl"):
        clnorm.layer_norm([[1.0, 2.0]], 2)
    with pytest.raises(TypeError, match="int32 is not supported"):
        clnorm.layer_norm(np.ones((2, 3), np.int32), 3)
    with pytest.raises(TypeError, match="torch.int64"):
        clnorm.rms_norm(torch.ones(2, 3, dtype=torch.int64), 3)
    with pytest.raises(TypeError, match="normalized_shape must be an int or a sequence"):
        clnorm.layer_norm(np.ones((2, 3), np.float32), 3.5)


def test_shape_mismatches():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"normalized_shape \[4\] does not match"):
        clnorm.layer_norm(x, 4)
    with pytest.raises(ValueError, match=r"weight must have shape \[3\]"):
        clnorm.layer_norm(x, 3, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="residual must be a numpy array of x's shape"):
        clnorm.layer_norm(x, 3, residual=np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match="return_sum=True needs a residual"):
        clnorm.rms_norm(x, 3, return_sum=True)
    with pytest.raises(ValueError, match="B = x.shape"):
        clnorm.layer_norm(np.ones((2, 4, 3), np.float32), 3, scale=np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match="not divisible by num_groups=3"):
        clnorm.group_norm(np.ones((2, 4, 5), np.float32), 3)
    with pytest.raises(ValueError, match="at least 2 dims"):
        clnorm.group_norm(np.ones(4, np.float32), 2)


def test_instance_norm_errors_change_nothing():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        clnorm.instance_norm(np.ones((2, 3, 1, 1), np.float32), rm, rv)
    with pytest.raises(ValueError, match=r"running_var must have shape \[3\]"):
        clnorm.instance_norm(x, rm, np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"weight must have shape \[3\]"):
        clnorm.instance_norm(x, rm, rv, np.ones(2, np.float32))
    with pytest.raises(TypeError, match="momentum must be a real number"):
        clnorm.instance_norm(x, rm, rv, momentum="0.1")
    with pytest.raises(ValueError, match="running_mean and running_var must be given"):
        clnorm.instance_norm(x, rm, None, use_input_stats=False)
    with pytest.raises(ValueError, match=r"running_mean must have shape \[3\]"):
        clnorm.instance_norm(x, np.zeros(2, np.float32), rv, use_input_stats=False)
    # every refusal came before the running statistics were touched
    assert not rm.any() and (rv == 1).all()


def test_dtype_mismatches():
    x = torch.ones(2, 3, dtype=torch.float32)
    with pytest.raises(TypeError, match="residual must have x's dtype"):
        clnorm.layer_norm(x, 3, residual=torch.ones(2, 3, dtype=torch.float64))


def test_library_messages_reach_the_caller():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError) as e:
        clnorm.layer_norm(x, 3, eps=-1.0)
    # the library's status name and its sentence naming the field
    assert "invalid argument" in str(e.value).lower() and "eps" in str(e.value)
    with pytest.raises(ValueError, match="eps"):
        clnorm.layer_norm(x, 3, eps=float("nan"))


def test_bad_device_spec():
    with pytest.raises(RuntimeError, match="no-such-device-xyz"):
        clnorm.Context("no-such-device-xyz")


def test_closed_context():
    ctx = clnorm.Context()
    ctx.close()
    with pytest.raises(RuntimeError, match="closed"):
        with ctx:
            clnorm.layer_norm(np.ones((2, 3), np.float32), 3)


# ---- inputs whose memory is not their values, and out= arrays that must not be written ----

def test_read_only_out_is_refused_and_untouched():
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    o = np.full((4, 64), 777, np.float32)
    o.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        clnorm.layer_norm(x, 64, out=o)
    assert (o == 777).all()
    b = np.full((4, 64), 777, np.float32).tobytes()
    before = bytes(b)
    with pytest.raises(ValueError, match="read-only"):
        clnorm.layer_norm(x, 64, out=np.frombuffer(b, np.float32).reshape(4, 64))
    assert b == before


@pytest.mark.parametrize("rows", [4, 2200])  # the host-pointer call, and the zero-copy buffers
def test_out_partly_overlapping_x_is_refused(rows):
    # y one row after x in the same array: neither in place nor apart. Large calls wrap each
    # tensor's memory in a buffer; overlapping ones share one, so the library sees the overlap.
    a = np.random.default_rng(1).standard_normal((rows + 1, 2048)).astype(np.float32)
    before = a.copy()
    with pytest.raises(ValueError, match="overlap"):
        clnorm.layer_norm(a[:-1], 2048, out=a[1:])
    assert np.array_equal(a, before)


def test_out_in_place_over_x_still_runs_large():
    a = np.random.default_rng(2).standard_normal((2200, 2048)).astype(np.float32)
    want = torch.nn.functional.layer_norm(torch.from_numpy(a).double(), (2048,))
    clnorm.layer_norm(a, 2048, out=a)
    assert (torch.from_numpy(a).double() - want).abs().max().item() < 2e-5


def test_torch_out_requiring_grad_is_refused():
    x = torch.randn(4, 64)
    leaf = torch.zeros(4, 64, requires_grad=True)
    with pytest.raises(ValueError, match="requires grad"):
        clnorm.layer_norm(x, 64, out=leaf)
    assert leaf.detach().abs().sum().item() == 0
    with torch.no_grad():  # as torch allows in-place writes there (initialization)
        clnorm.layer_norm(x, 64, out=leaf)
    assert leaf.detach().abs().sum().item() > 0


def test_torch_out_write_is_seen_by_autograd():
    # o is saved by autograd for w's gradient; writing it through out= must make backward
    # refuse, as torch's own in-place operations do, not compute from the new contents.
    x = torch.randn(4, 64)
    w = torch.ones(64, requires_grad=True)
    o = torch.ones(4, 64)
    z = (o * w).sum()
    for _ in range(2):  # the first call, then the repeated-call shortcut
        v = o._version
        clnorm.layer_norm(x, 64, out=o)
        assert o._version > v
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_torch_lazy_views_are_read_as_their_values():
    x = torch.randn(4, 64)
    nv = torch._neg_view(x)
    want = torch.nn.functional.layer_norm(-x.double(), (64,))
    for _ in range(2):
        assert (clnorm.layer_norm(nv, 64).double() - want).abs().max().item() < 2e-5
    w = torch.randn(64)
    want = torch.nn.functional.layer_norm(x.double(), (64,), -w.double())
    got = clnorm.layer_norm(x, 64, torch._neg_view(w))
    assert (got.double() - want).abs().max().item() < 2e-5
    with pytest.raises(ValueError, match="negated or conjugated"):
        clnorm.layer_norm(x, 64, out=torch._neg_view(torch.empty(4, 64)))


def test_inputs_that_are_not_real_dense_arrays():
    x = np.ones((4, 64), np.float32)
    with pytest.raises(TypeError, match="real numbers"):
        clnorm.layer_norm(x, 64, np.ones(64, np.complex64))
    with pytest.raises(TypeError, match="real numbers"):
        clnorm.layer_norm(x, 64, "abc")
    with pytest.raises(TypeError, match="eps"):
        clnorm.layer_norm(x, 64, eps="1e-5")
    with pytest.raises(TypeError, match="eps"):
        clnorm.group_norm(np.ones((2, 4, 3), np.float32), 2, eps=[1e-5])
    t = torch.randn(4, 64)
    with pytest.raises(TypeError, match="dense"):
        clnorm.layer_norm(t.to_sparse(), 64)
    with pytest.raises(TypeError, match="dense"):
        clnorm.layer_norm(t, 64, t[0].to_sparse())
