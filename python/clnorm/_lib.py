"""ctypes declarations of libclnorm (include/clnorm.h): the structs, the functions the package
calls and the enum values it names.

The enum values are copied from the header, which appends values and never renumbers them;
tests/python/test_binding.py checks them against the library's own names (clnorm_arg_name,
clnorm_op_query), so a mismatch fails there rather than here at run time.
"""
import ctypes
import os

# ---- status codes ----
OK = 0
INVALID_ARGUMENT = -4000
BUFFER_TOO_SMALL = -4001
UNSUPPORTED = -4002
OUT_OF_MEMORY = -4003
BUILD_FAILURE = -4004
NO_DEVICE = -4005
OPENCL_ERROR = -4006

# ---- kinds (the op table's keys) ----
LAYER, RMS, ADD_LAYER, ADD_RMS, GROUP = 0, 1, 2, 3, 4

# ---- storage types ----
F32, F16, BF16, F64 = 0, 1, 2, 3

# ---- GroupNorm layouts ----
NCHW, NHWC = 0, 1

# ---- flags ----
NO_GAMMA = 1 << 0
NO_BETA = 1 << 1
SAVE_STATS = 1 << 2
WITH_BACKWARD = 1 << 3
RESIDUAL_F32 = 1 << 4
SILU = 1 << 5
SCALE = 1 << 6
SHIFT = 1 << 7
USE_GLOBAL_STATS = 1 << 8

# ---- directions ----
FORWARD, BACKWARD = 0, 1

# ---- slot uses ----
SLOT_UNUSED, SLOT_REQUIRED, SLOT_OPTIONAL = 0, 1, 2

# ---- backends ----
BACKEND_OPENCL, BACKEND_REFERENCE = 0, 1

# ---- argument slots, by the names clnorm_arg_name gives them ----
SLOTS = ("x", "y", "gamma", "beta", "mean", "rstd", "residual", "sum", "dy", "dx", "dgamma",
         "dbeta", "dsum", "scale", "shift", "dscale", "dshift")
SLOT = {name: i for i, name in enumerate(SLOTS)}
SLOT_COUNT = len(SLOTS)

# ---- op names, by kind, as clnorm_op_query names them ----
OP_NAMES = ("layer_norm", "rms_norm", "add_layer_norm", "add_rms_norm", "group_norm")

cl_mem = ctypes.c_void_p
cl_command_queue = ctypes.c_void_p
cl_event = ctypes.c_void_p


class Desc(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("rows", ctypes.c_size_t),
        ("cols", ctypes.c_size_t),
        ("x_stride", ctypes.c_size_t),
        ("y_stride", ctypes.c_size_t),
        ("eps", ctypes.c_double),
        ("flags", ctypes.c_uint),
        ("residual_stride", ctypes.c_size_t),
        ("sum_stride", ctypes.c_size_t),
        ("groups", ctypes.c_size_t),
        ("spatial", ctypes.c_size_t),
        ("layout", ctypes.c_int),
        ("samples", ctypes.c_size_t),
        ("mod_stride", ctypes.c_size_t),
    ]


class SlotInfo(ctypes.Structure):
    _fields_ = [
        ("use", ctypes.c_int),
        ("is_output", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("rows", ctypes.c_size_t),
        ("cols", ctypes.c_size_t),
        ("stride", ctypes.c_size_t),
        ("extent", ctypes.c_size_t),
    ]


class OpInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("summary", ctypes.c_char_p),
        ("forward_slots", ctypes.c_uint),
        ("backward_slots", ctypes.c_uint),
        ("has_mean", ctypes.c_int),
        ("has_residual", ctypes.c_int),
        ("base_kind", ctypes.c_int),
        ("has_host_loop", ctypes.c_int),
    ]


class Arg(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int), ("mem", cl_mem), ("offset", ctypes.c_size_t)]


class HostArg(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int), ("ptr", ctypes.c_void_p)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("platform_index", ctypes.c_uint),
        ("device_index", ctypes.c_uint),
        ("platform_name", ctypes.c_char * 128),
        ("device_name", ctypes.c_char * 128),
        ("type", ctypes.c_uint64),
        ("global_mem_bytes", ctypes.c_uint64),
        ("compute_units", ctypes.c_uint),
        ("has_fp16", ctypes.c_int),
        ("has_fp64", ctypes.c_int),
        ("is_default", ctypes.c_int),
    ]


def _find_library():
    """The libclnorm installed inside this package, or the one CLNORM_LIBRARY names (a build
    tree's, for working on the C side without reinstalling)."""
    explicit = os.environ.get("CLNORM_LIBRARY")
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libclnorm.so.0", "libclnorm.so", "libclnorm.dylib", "clnorm.dll"):
        path = os.path.join(here, name)
        if os.path.exists(path):
            return path
    raise ImportError(
        "clnorm: the C library is not inside the package (%s); install the package with "
        "`pip install .` from a clnorm checkout, or set CLNORM_LIBRARY to a built "
        "libclnorm.so" % here)


def _declare(lib):
    c = ctypes
    status = c.c_int
    sig = {
        "clnorm_status_string": (c.c_char_p, [status]),
        "clnorm_op_count": (c.c_size_t, []),
        "clnorm_op_query": (status, [c.c_int, c.POINTER(OpInfo)]),
        "clnorm_arg_name": (c.c_char_p, [c.c_int]),
        "clnorm_desc_init": (None, [c.POINTER(Desc), c.c_int, c.c_size_t, c.c_size_t]),
        "clnorm_desc_check": (status, [c.POINTER(Desc), c.c_char_p, c.c_size_t]),
        "clnorm_slot_query": (status, [c.POINTER(Desc), c.c_int, c.c_int, c.POINTER(SlotInfo)]),
        "clnorm_create": (status, [c.c_char_p, c.POINTER(c.c_void_p)]),
        "clnorm_create_from_queue": (status, [cl_command_queue, c.POINTER(c.c_void_p)]),
        "clnorm_free": (None, [c.c_void_p]),
        "clnorm_get_backend": (c.c_int, [c.c_void_p]),
        "clnorm_device_name": (c.c_char_p, [c.c_void_p]),
        "clnorm_get_queue": (cl_command_queue, [c.c_void_p]),
        "clnorm_get_cl_context": (c.c_void_p, [c.c_void_p]),
        "clnorm_last_error": (c.c_char_p, [c.c_void_p]),
        "clnorm_program_builds": (c.c_size_t, [c.c_void_p]),
        "clnorm_list_devices": (status, [c.POINTER(DeviceInfo), c.c_size_t,
                                         c.POINTER(c.c_size_t)]),
        "clnorm_plan_create": (status, [c.c_void_p, c.POINTER(Desc), c.POINTER(c.c_void_p)]),
        "clnorm_plan_free": (None, [c.c_void_p]),
        "clnorm_plan_strategy": (c.c_int, [c.c_void_p]),
        "clnorm_plan_uses_host_loop": (c.c_int, [c.c_void_p, c.c_int]),
        "clnorm_strategy_name": (c.c_char_p, [c.c_int]),
        "clnorm_execute": (status, [c.c_void_p, c.c_int, c.POINTER(Arg), c.c_size_t,
                                    cl_command_queue, c.c_uint, c.POINTER(cl_event),
                                    c.POINTER(cl_event)]),
        "clnorm_execute_host": (status, [c.c_void_p, c.c_int, c.POINTER(HostArg),
                                         c.c_size_t]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _load():
    path = _find_library()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        # Most often libOpenCL.so.1 (the ICD loader libclnorm links) is missing.
        raise ImportError("clnorm: cannot load %s: %s (is an OpenCL ICD loader, e.g. Debian's "
                          "ocl-icd-libopencl1, installed?)" % (path, e)) from e
    _declare(lib)
    return lib, path


lib, library_path = _load()


def status_string(status):
    return lib.clnorm_status_string(status).decode("utf-8", "replace")


def last_error(ctx_handle):
    msg = lib.clnorm_last_error(ctx_handle)
    return msg.decode("utf-8", "replace") if msg else ""

