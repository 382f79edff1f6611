"""Devices, contexts and the per-context plan cache.

A Context wraps a clnorm_ctx: one OpenCL device, its queue and its program cache. Plans (a
description baked on a context: validated, strategy chosen, kernels built) are cached per
(context, description), so a training loop builds each shape's plan once and then only
executes. The context used by a call is the innermost `with Context(...)` of the calling
thread, else the default one, made on first use from CLNORM_DEVICE as the C library reads it.
NumPy arrays and torch CPU tensors run on that context's device; a pyopencl array runs on its
own queue (see _core).
"""
import atexit
import collections
import ctypes
import os
import threading
import weakref

from . import _errors, _lib

_lib_handle = _lib.lib

# Plans kept per context; beyond this the least recently used is dropped (freed once no call
# holds it). Each plan holds kernel objects and scratch, and a loop over varying shapes (e.g.
# sequence lengths) would otherwise grow without bound.
PLAN_CACHE_SIZE = 256

_DEVICE_TYPES = {1 << 1: "cpu", 1 << 2: "gpu", 1 << 3: "accelerator", 1 << 4: "custom"}


class Device(collections.namedtuple(
        "Device", "spec platform name type global_mem_bytes compute_units has_fp16 has_fp64 "
                  "is_default")):
    """One OpenCL device as `clnorm devices` lists it; `spec` ("P:D") selects it."""
    __slots__ = ()


def devices():
    """The OpenCL devices of every platform (an empty list when there is none)."""
    count = ctypes.c_size_t(0)
    _errors.check(_lib_handle.clnorm_list_devices(None, 0, ctypes.byref(count)), None,
                  "listing devices")
    infos = (_lib.DeviceInfo * max(1, count.value))()
    _errors.check(_lib_handle.clnorm_list_devices(infos, count.value, ctypes.byref(count)), None,
                  "listing devices")
    out = []
    for d in infos[:count.value]:
        kind = next((name for bit, name in _DEVICE_TYPES.items() if d.type & bit), "other")
        out.append(Device("%d:%d" % (d.platform_index, d.device_index),
                          d.platform_name.decode("utf-8", "replace"),
                          d.device_name.decode("utf-8", "replace"), kind, d.global_mem_bytes,
                          d.compute_units, bool(d.has_fp16), bool(d.has_fp64),
                          bool(d.is_default)))
    return out


class _CtxHandle:
    """Owns a clnorm_ctx. Plans hold a reference to it, so the context is freed only after
    its last plan, as the C library requires."""
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def free(self):
        ptr, self.ptr = self.ptr, None
        if ptr and _lib_handle is not None:
            _lib_handle.clnorm_free(ptr)

    def __del__(self):
        self.free()


class Plan:
    """A clnorm_plan and its slots' layouts per direction (clnorm_slot_query)."""
    __slots__ = ("handle", "ctx_handle", "key", "infos", "strategy", "row_bytes", "host_loop",
                 "__weakref__")

    def __init__(self, ctx_handle, key):
        self.ctx_handle = ctx_handle
        self.key = key
        self.handle = None
        desc = _lib.Desc(*key)
        plan = ctypes.c_void_p()
        st = _lib_handle.clnorm_plan_create(ctx_handle.ptr, ctypes.byref(desc), ctypes.byref(plan))
        _errors.check(st, ctx_handle.ptr, "creating the plan of %s" % describe(key))
        self.handle = plan.value
        self.strategy = _lib_handle.clnorm_strategy_name(
            _lib_handle.clnorm_plan_strategy(self.handle)).decode()
        # Directions whose host calls run the library's host loop (no command, no copy):
        # see _core.
        self.host_loop = {d: bool(_lib_handle.clnorm_plan_uses_host_loop(self.handle, d))
                          for d in (_lib.FORWARD, _lib.BACKWARD)}
        dirs = [_lib.FORWARD] + ([_lib.BACKWARD] if key[7] & _lib.WITH_BACKWARD else [])
        self.infos = {}
        info = _lib.SlotInfo()
        for direction in dirs:
            slots = {}
            for slot in range(_lib.SLOT_COUNT):
                _errors.check(_lib_handle.clnorm_slot_query(ctypes.byref(desc), direction, slot,
                                                            ctypes.byref(info)),
                              None, "querying slot %s" % _lib.SLOTS[slot])
                if info.use != _lib.SLOT_UNUSED:
                    slots[slot] = (info.use, bool(info.is_output), info.dtype, info.extent)
            self.infos[direction] = slots
        # Bytes of the forward's tensors: small problems are cheaper through the library's
        # host-copy call than through zero-copy buffers (see _core).
        self.row_bytes = sum(extent * DTYPE_SIZE[dt]
                             for _, _, dt, extent in self.infos[_lib.FORWARD].values())

    def free(self):
        handle, self.handle = self.handle, None
        if handle and _lib_handle is not None:
            _lib_handle.clnorm_plan_free(handle)

    def __del__(self):
        self.free()


DTYPE_SIZE = {_lib.F32: 4, _lib.F16: 2, _lib.BF16: 2, _lib.F64: 8}
DTYPE_NAME = {_lib.F32: "float32", _lib.F16: "float16", _lib.BF16: "bfloat16",
              _lib.F64: "float64"}


def describe(key):
    """A readable name of a description key, for messages."""
    return "%s %s %dx%d" % (_lib.OP_NAMES[key[0]] if key[0] < len(_lib.OP_NAMES) else key[0],
                            DTYPE_NAME.get(key[1], key[1]), key[2], key[3])


_live = weakref.WeakSet()


class Context:
    """An OpenCL device for clnorm's calls.

    Context(device=None): device is "gpu", "cpu", "accelerator", "P:D" (as devices() lists),
    or a substring of a device, vendor or platform name; None reads CLNORM_DEVICE, else takes
    the first GPU, else any device, else the CPU reference. `with Context("cpu"):` makes it
    the current context of the calling thread inside the block. close() frees it (also done
    when it is garbage); plans of a closed context are freed with it.
    """

    def __init__(self, device=None, *, _queue=None, _keepalive=None):
        ptr = ctypes.c_void_p()
        if _queue is not None:
            st = _lib_handle.clnorm_create_from_queue(_queue, ctypes.byref(ptr))
            what = "adopting an OpenCL queue"
        else:
            spec = None if device is None else str(device).encode()
            st = _lib_handle.clnorm_create(spec, ctypes.byref(ptr))
            if device is not None:
                what = "creating a context on device %r" % (device,)
            elif os.environ.get("CLNORM_DEVICE"):
                what = "creating a context on CLNORM_DEVICE=%r" % os.environ["CLNORM_DEVICE"]
            else:
                what = "creating a context on the default device"
        _errors.check(st, None, what)
        self._handle = _CtxHandle(ptr.value)
        self._keepalive = _keepalive  # the adopted pyopencl queue, kept as long as we use it
        self._plans = collections.OrderedDict()
        self._lock = threading.Lock()
        self.fast_calls = {}  # functional's memoized host calls: signature -> plan and layout
        self.backend = ("opencl" if _lib_handle.clnorm_get_backend(ptr.value) ==
                        _lib.BACKEND_OPENCL else "reference")
        self.device_name = _lib_handle.clnorm_device_name(ptr.value).decode("utf-8", "replace")
        self.cl_context = _lib_handle.clnorm_get_cl_context(ptr.value)
        self.cl_queue = _lib_handle.clnorm_get_queue(ptr.value)
        _live.add(self)

    @classmethod
    def from_queue(cls, queue):
        """A context on the application's pyopencl CommandQueue (clnorm_create_from_queue):
        its calls run there by default."""
        return cls(_queue=queue.int_ptr, _keepalive=queue)

    @property
    def handle(self):
        h = self._handle
        if h is None or not h.ptr:
            raise RuntimeError("clnorm: the context was closed")
        return h

    def plan(self, key):
        """The cached plan of a description key (a tuple of clnorm_desc's fields in order)."""
        plans = self._plans
        p = plans.get(key)
        if p is not None:
            plans.move_to_end(key)
            return p
        with self._lock:
            p = plans.get(key)
            if p is None:
                p = Plan(self.handle, key)
                plans[key] = p
                while len(plans) > PLAN_CACHE_SIZE:
                    plans.popitem(last=False)
            return p

    @property
    def program_builds(self):
        """OpenCL programs this context has built (its program cache's misses)."""
        return _lib_handle.clnorm_program_builds(self.handle.ptr)

    @property
    def plan_count(self):
        return len(self._plans)

    def close(self):
        with self._lock:
            self.fast_calls = {}
            plans = list(self._plans.values())
            self._plans.clear()
        for p in plans:
            p.free()
        h, self._handle = self._handle, None
        if h is not None:
            h.free()

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        stack = _stack()
        if stack and stack[-1] is self:
            stack.pop()
        return False

    def __repr__(self):
        return "clnorm.Context(%r, backend=%s)" % (self.device_name, self.backend)


_tls = threading.local()
_default = None
_default_lock = threading.Lock()


def _stack():
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


def current_context():
    """The calling thread's innermost `with Context(...)`, else the default context (made on
    first use from CLNORM_DEVICE)."""
    s = getattr(_tls, "stack", None)
    if s:
        return s[-1]
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Context(None)
    return _default


_adopted = weakref.WeakKeyDictionary()
_adopted_lock = threading.Lock()


def context_for_queue(queue):
    """The context a pyopencl array's queue runs on: the current context when it shares the
    queue's cl_context, else one adopting the queue, made once per queue."""
    s = getattr(_tls, "stack", None)
    if s and s[-1].cl_context == queue.context.int_ptr:
        return s[-1]
    ctx = _adopted.get(queue)
    if ctx is None:
        with _adopted_lock:
            ctx = _adopted.get(queue)
            if ctx is None:
                ctx = Context.from_queue(queue)
                ctx._keepalive = None  # the weak key owns the lifetime here, not the context
                _adopted[queue] = ctx
    return ctx


def _close_all():
    # At exit, free plans before their contexts and both before the OpenCL runtime unloads.
    for ctx in list(_live):
        ctx.close()


atexit.register(_close_all)
