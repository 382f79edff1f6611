"""Devices, contexts, the plan cache, and the binding's copy of the header's enums."""
import ctypes
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import clnorm
from clnorm import _lib
from conftest import assert_close, to64


def test_enums_match_the_library():
    # The binding's slot and op names are the library's, at the same values.
    names = [_lib.lib.clnorm_arg_name(i).decode() for i in range(_lib.SLOT_COUNT)]
    assert tuple(names) == _lib.SLOTS
    assert _lib.lib.clnorm_op_count() == len(_lib.OP_NAMES)
    info = _lib.OpInfo()
    for kind, name in enumerate(_lib.OP_NAMES):
        assert _lib.lib.clnorm_op_query(kind, ctypes.byref(info)) == 0
        assert info.name.decode() == name
    d = _lib.Desc()
    _lib.lib.clnorm_desc_init(ctypes.byref(d), _lib.GROUP, 2, 8)
    assert (d.eps, d.dtype, d.groups, d.spatial) == (pytest.approx(1e-5), _lib.F32, 1, 1)


def test_devices():
    devs = clnorm.devices()
    for d in devs:
        assert d.type in ("cpu", "gpu", "accelerator", "custom", "other")
        assert d.spec.count(":") == 1
    if devs:
        assert sum(d.is_default for d in devs) == 1


def test_context_manager_and_plan_cache():
    if not clnorm.devices():
        pytest.skip("no OpenCL device")
    x = np.random.default_rng(0).standard_normal((4, 24)).astype(np.float32)
    with clnorm.Context(clnorm.devices()[0].spec) as ctx:
        assert clnorm.current_context() is ctx
        y = clnorm.layer_norm(x, 24)
        builds, plans = ctx.program_builds, ctx.plan_count
        for _ in range(3):
            clnorm.layer_norm(x, 24)  # a training loop: the same description, no rebuild
        assert (ctx.program_builds, ctx.plan_count) == (builds, plans)
        clnorm.layer_norm(x[:2], 24)  # another shape: another plan
        assert ctx.plan_count == plans + 1
    assert clnorm.current_context() is not ctx
    assert_close(y, F.layer_norm(to64(x), (24,)), "float32", "in a context")
    ctx.close()


def test_contexts_are_per_thread():
    ctx = clnorm.Context()
    seen = {}

    def worker():
        seen["thread"] = clnorm.current_context()

    with ctx:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert clnorm.current_context() is ctx
    assert seen["thread"] is not ctx  # a `with` block is the calling thread's only
    ctx.close()


def test_default_context_from_environment():
    # The default context is made lazily, from CLNORM_DEVICE, as the C library reads it.
    code = ("import clnorm, numpy as np\n"
            "try:\n"
            "    clnorm.layer_norm(np.ones((1, 4), np.float32), 4)\n"
            "except RuntimeError as e:\n"
            "    print('refused:', e)\n")
    env = dict(os.environ, CLNORM_DEVICE="no-such-device-xyz")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "refused:" in out.stdout and "CLNORM_DEVICE='no-such-device-xyz'" in out.stdout
    assert "no opencl device" in out.stdout.lower()


def test_calls_from_threads_share_plans():
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(1))
    ref = F.layer_norm(x.double(), (32,))
    errors = []

    def worker():
        try:
            for _ in range(5):
                assert_close(clnorm.layer_norm(x, 32), ref, "float32", "thread")
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
