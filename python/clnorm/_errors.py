"""Library statuses as Python exceptions carrying the library's own sentence."""
from . import _lib

# A caller's mistake (a bad description or argument, a tensor too small) is a ValueError; the
# rest (no device, a feature the device lacks, a kernel build or OpenCL failure) RuntimeError.
_VALUE_ERRORS = (_lib.INVALID_ARGUMENT, _lib.BUFFER_TOO_SMALL)


class UnsupportedError(RuntimeError):
    """The device cannot do what was asked (CLNORM_UNSUPPORTED), e.g. float64 without
    cl_khr_fp64."""


def error_for(status, message):
    if status in _VALUE_ERRORS:
        return ValueError(message)
    if status == _lib.UNSUPPORTED:
        return UnsupportedError(message)
    return RuntimeError(message)


def check(status, ctx_handle, what):
    """Raises the exception of a failed status: '<what>: <status name>: <last error>'."""
    if status == _lib.OK:
        return
    detail = _lib.last_error(ctx_handle) if ctx_handle else ""
    message = "clnorm: %s: %s" % (what, _lib.status_string(status))
    if detail:
        message += ": " + detail
    raise error_for(status, message)
