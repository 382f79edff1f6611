"""clnorm: LayerNorm, RMSNorm, fused residual add + norm, GroupNorm and InstanceNorm on any
OpenCL device, from NumPy arrays, torch CPU tensors and pyopencl arrays.

    import clnorm
    y = clnorm.layer_norm(x, (768,), weight, bias)        # as torch.nn.functional.layer_norm
    y = clnorm.rms_norm(x, (4096,), weight, eps=1e-6)
    y, h = clnorm.layer_norm(x, 768, w, b, residual=h, return_sum=True)
    y = clnorm.group_norm(x, 32, weight, bias, silu=True)
    y = clnorm.instance_norm(x, running_mean, running_var)  # as F.instance_norm
    clnorm.nn.replace_norms(model)                         # torch modules through clnorm

`clnorm.nn` (torch modules) is imported on first use, so the package imports without torch.
"""
from ._errors import UnsupportedError
from ._lib import library_path
from .context import Context, Device, current_context, devices
from .functional import group_norm, instance_norm, layer_norm, rms_norm

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("clnorm")
except PackageNotFoundError:  # run from a source tree with CLNORM_LIBRARY
    __version__ = None

__all__ = ["layer_norm", "rms_norm", "group_norm", "instance_norm", "Context", "Device",
           "devices", "current_context", "UnsupportedError", "library_path", "nn"]


def __getattr__(name):
    if name == "nn":  # needs torch: imported when asked for
        import importlib

        return importlib.import_module(".nn", __name__)
    raise AttributeError("module 'clnorm' has no attribute %r" % name)
