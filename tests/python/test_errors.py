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
