"""The one generic call: a description, named slots in, named slots out.

Every function of the package ends here with a Call: the description's key (clnorm_desc's
fields in order), the input arrays by slot and the outputs to make by slot. The plan comes
from the context's cache; which slots it takes and each one's element type and extent come
from the library's op table (clnorm_slot_query, read once per plan), so nothing here knows
one operation from another.

How a call reaches the library:
- pyopencl arrays: layer 1 (clnorm_execute) on their own cl_mem and queue, after their events;
  the outputs get the call's event. Nothing is copied or waited for.
- host arrays (NumPy, torch CPU), large problems: layer 1 on CL_MEM_USE_HOST_PTR buffers over
  the arrays' own memory, then a map/unmap of each output (_opencl.sync_outputs).
- host arrays, small problems, or a context without an OpenCL device: layer 2
  (clnorm_execute_host), which copies; below ZERO_COPY_FROM bytes its copies cost less than
  the zero-copy path's extra commands (PoCL: about 20 us each), and on the reference backend
  it is the only way.
- host arrays whose plan runs the library's host loop in that direction
  (clnorm_plan_uses_host_loop: an op on a CPU device, x of at most CLNORM_HOST_BYTES, or
  CLNORM_HOST_BACKWARD_BYTES for the backward): layer 2 at every size, where the loop reads
  and writes the arrays in place (the calling thread and the context's host-loop threads),
  with no command and no copy.
"""
import ctypes
import struct

from . import _errors, _lib, _opencl
from .context import DTYPE_NAME, DTYPE_SIZE, context_for_queue, current_context  # noqa: F401

_L = _lib.lib
_execute = _L.clnorm_execute
# The host call again, taking its argument array as packed bytes: struct.pack builds it
# several times faster than a ctypes array of structs, which matters at 1x768 (issue #13's
# 20 us). clnorm_host_arg is {int slot; (4 bytes padding); void *ptr}.
_execute_host = _L["clnorm_execute_host"]
_execute_host.restype = ctypes.c_int
_execute_host.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
assert ctypes.sizeof(_lib.HostArg) == 16 and _lib.HostArg.ptr.offset == 8
HOST_FORMATS = ["<" + "iiQ" * n for n in range(_lib.SLOT_COUNT + 1)]

# Forward bytes (every tensor's extent) from which host arrays go zero-copy; measured on PoCL
# (bench/python/overhead.py): 1x768 float32 (6 KiB) is 40-50 us faster through layer 2,
# 8192x768 (25 MiB) about 4x faster zero-copy.
ZERO_COPY_FROM = 256 * 1024

# A backward's saved float32 statistics with a |mean| * rstd above this are left out, to be
# recomputed from x: their mean's rounding, |mean| 2^-24, would reach dx times rstd. The
# library's host calls (layer 2) do this themselves (src/execute.c, SAVED_MEAN_SPAN); the
# zero-copy path is layer 1, which cannot look at the statistics, so it looks here.
SAVED_MEAN_SPAN = 16.0
# ... and so are they, whatever their mean, where a parameter gradient sums more than this many
# terms an element: each row's or group's float32 rstd carries its own rounding into every
# term (src/flags.h, CLNORM_SAVED_PARAM_TERMS, which the host calls apply on devices with
# double; the package applies it on any, whose context does not say).
SAVED_PARAM_TERMS = 4096
_HAS_MEAN = {}


class Call:
    """kind: the arrays' kind (_kinds); like: an array of that kind (x), whose queue a
    pyopencl call runs on; key: the description; inputs: [(slot, array)]; outputs:
    [(slot, shape, order)], order a permutation giving the physical layout of an output made
    channels-last, or None for row-major; given: {slot: array} of outputs the caller provides
    (out=), written in place of new ones."""
    __slots__ = ("kind", "like", "key", "inputs", "outputs", "given")

    def __init__(self, kind, like, key, inputs, outputs, given=None):
        self.kind = kind
        self.like = like
        self.key = key
        self.inputs = inputs
        self.outputs = outputs
        self.given = given


def desc_key(kind, dtype, rows, cols, eps, flags, x_stride=0, y_stride=0, residual_stride=0,
             sum_stride=0, groups=0, spatial=0, layout=_lib.NCHW, samples=0, mod_stride=0):
    """clnorm_desc's fields, in the struct's order (a plan cache key)."""
    return (kind, dtype, rows, cols, x_stride, y_stride, float(eps), flags, residual_stride,
            sum_stride, groups, spatial, layout, samples, mod_stride)


def context_of(call):
    if call.kind.on_device:
        return context_for_queue(call.like.queue)
    return current_context()


def run(call, direction=_lib.FORWARD, ctx=None):
    """Runs a call on ctx (None: the call's context); returns its outputs, in the order of
    call.outputs."""
    if ctx is None:
        ctx = context_of(call)
    plan = ctx.plan(call.key)
    info = plan.infos.get(direction)
    if info is None:
        raise ValueError("clnorm: the plan of %s has no backward pass" % (call.key,))
    kind = call.kind
    _check_args(kind, info, call.inputs, call.key)
    tensors = list(call.inputs)
    outs = []
    for slot, shape, order in call.outputs:
        slot_info = info.get(slot)
        if slot_info is None or not slot_info[1]:
            raise ValueError("clnorm: %s is not an output of %s" % (_lib.SLOTS[slot],
                                                                     _lib.OP_NAMES[call.key[0]]))
        out = call.given.get(slot) if call.given else None
        if out is None:
            out = kind.empty(shape, slot_info[2], call.like, order)
        else:
            _check_given(kind, out, slot, shape, order, slot_info[2])
        outs.append(out)
        tensors.append((slot, out))
    if kind.on_device:
        _run_device(ctx, plan, direction, tensors, outs, call.like.queue)
    elif (ctx.backend == "opencl" and plan.row_bytes >= ZERO_COPY_FROM and
          not plan.host_loop[direction]):
        _run_zero_copy(ctx, plan, direction, info, _saved_stats_kept(call, direction, tensors),
                       kind.ptr)
    else:
        _run_host(ctx, plan, direction, tensors, kind.ptr)
    if call.given:
        for out in call.given.values():
            if out is not None:
                kind.written(out)
    return outs


def _has_mean(op_kind):
    if op_kind not in _HAS_MEAN:
        info = _lib.OpInfo()
        _HAS_MEAN[op_kind] = (_L.clnorm_op_query(op_kind, ctypes.byref(info)) == 0 and
                              bool(info.has_mean))
    return _HAS_MEAN[op_kind]


def _param_terms(call, tensors):
    """The terms each element of the parameter gradients asked for sums, where the statistics
    reach them (src/execute.c, saved_param_terms): dgamma's (dbeta's with the SiLU) every row
    and position, dscale's (dshift's with the SiLU) a sample's; 0 for none."""
    key, asked = call.key, {s for s, _ in tensors}
    silu = key[7] & _lib.SILU
    every = key[2] * max(key[11], 1)
    if _lib.SLOT["dgamma"] in asked or (silu and _lib.SLOT["dbeta"] in asked):
        return every
    if _lib.SLOT["dscale"] in asked or (silu and _lib.SLOT["dshift"] in asked):
        return every // max(key[13], 1)
    return 0


def _saved_stats_kept(call, direction, tensors):
    """tensors, less a backward's saved float32 statistics (not precomputed ones) where its
    parameter gradients sum more than SAVED_PARAM_TERMS terms an element or, for an op with a
    mean, where a row's or group's |mean| * rstd is above SAVED_MEAN_SPAN: the library then
    recomputes them, as its host calls do (README, Numerics, "Saved statistics of host
    calls")."""
    key = call.key
    if direction != _lib.BACKWARD or key[1] == _lib.F64 or key[7] & _lib.USE_GLOBAL_STATS:
        return tensors
    got = dict(tensors)
    mean, rstd = got.get(_lib.SLOT["mean"]), got.get(_lib.SLOT["rstd"])
    has_mean = _has_mean(key[0])
    if rstd is None or (has_mean and mean is None):
        return tensors
    drop = [(s, t) for s, t in tensors if s not in (_lib.SLOT["mean"], _lib.SLOT["rstd"])]
    if _param_terms(call, tensors) > SAVED_PARAM_TERMS:
        return drop
    if not has_mean:
        return tensors
    n = mean.numel() if callable(getattr(mean, "numel", None)) else mean.size
    if n == 0 or not float((abs(mean) * abs(rstd)).max()) > SAVED_MEAN_SPAN:  # (NaN: kept)
        return tensors
    return drop


def _check_args(kind, info, tensors, key):
    """Each array's element type is its slot's, and it holds the slot's extent: host pointers
    carry no size, so this is what keeps a call inside the caller's memory."""
    for slot, a in tensors:
        slot_info = info.get(slot)
        if slot_info is None:
            raise ValueError("clnorm: %s takes no %s" % (_lib.OP_NAMES[key[0]], _lib.SLOTS[slot]))
        code = kind.dtypes.get(a.dtype)
        if code != slot_info[2]:
            code = kind.code(a)  # raises for a dtype clnorm does not take at all
            raise TypeError("clnorm: %s must be %s for %s input (got %s)"
                            % (_lib.SLOTS[slot], DTYPE_NAME[slot_info[2]],
                               DTYPE_NAME[key[1]], DTYPE_NAME[code]))
        if kind.on_device:
            continue  # the library checks a cl_mem's size itself
        if not kind.is_host(a):
            kind.code(a)  # raises, naming where the tensor is
        n = kind.size(a) if kind.is_contiguous(a) else _span(a.shape, kind.strides(a))
        if n < slot_info[3]:
            raise ValueError("clnorm: %s holds fewer elements than the %d the operation reads "
                             "or writes" % (_lib.SLOTS[slot], slot_info[3]))


def _check_given(kind, a, slot, shape, order, code):
    """An out= array must be what the call would have made: kind, dtype, shape and layout."""
    name = _lib.SLOTS[slot]
    if not kind.owns(a):
        raise TypeError("clnorm: out (%s) must be a %s like x" % (name, kind.name))
    kind.check_out(a, name)
    if kind.dtypes.get(a.dtype) != code:
        raise TypeError("clnorm: out (%s) must be %s (got %s)" % (name, DTYPE_NAME[code], a.dtype))
    if tuple(a.shape) != tuple(shape):
        raise ValueError("clnorm: out (%s) must have shape %s (got %s)"
                         % (name, list(shape), list(a.shape)))
    if not kind.is_host(a):
        kind.code(a)  # raises, naming where the tensor is
    strides = kind.strides(a)
    if order is None:
        ok = kind.is_contiguous(a)
    else:  # channels-last: contiguous in the physical order
        ok = strides is not None and \
            tuple(strides[i] for i in order) == _dense([shape[i] for i in order])
    if not ok:
        raise ValueError("clnorm: out (%s) must be contiguous%s" % (
            name, "" if order is None else " in x's channels-last order"))


def _dense(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def _span(shape, strides):
    span = 1
    for n, s in zip(shape, strides):
        if n == 0:
            return 0
        span += (n - 1) * s
    return span


def _run_host(ctx, plan, direction, tensors, host_ptr):
    fields = []
    for slot, a in tensors:
        fields += (slot, 0, host_ptr(a))
    args = struct.pack(HOST_FORMATS[len(tensors)], *fields)
    st = _execute_host(plan.handle, direction, args, len(tensors))
    if st:
        _errors.check(st, ctx.handle.ptr, _what(plan, direction))


def run_host_packed(ctx, plan, fmt, fields, n):
    """The forward host call on (slot, 0, pointer) fields already in order (the memoized
    path of functional._row_norm)."""
    st = _execute_host(plan.handle, _lib.FORWARD, struct.pack(fmt, *fields), n)
    if st:
        _errors.check(st, ctx.handle.ptr, _what(plan, _lib.FORWARD))


def _run_zero_copy(ctx, plan, direction, info, tensors, host_ptr):
    cl_context = ctx.cl_context
    spans = []  # (pointer, bytes, slot, dtype, is_output) of every tensor with elements
    for slot, a in tensors:
        _, is_output, dtype, extent = info[slot]
        nbytes = extent * DTYPE_SIZE[dtype]
        if nbytes:  # an empty tensor: nothing to read or write
            spans.append((host_ptr(a), nbytes, slot, dtype, is_output))
    # Tensors whose memory overlaps share one buffer over their union, each at its element
    # offset in it: the library then sees the overlap (in place, or refused) as it does for
    # host pointers, where one buffer per tensor would hide it.
    clusters = []  # [start, end, [span index, ...]]
    for i in sorted(range(len(spans)), key=lambda i: spans[i][0]):
        p, n = spans[i][0], spans[i][1]
        if clusters and p < clusters[-1][1]:
            clusters[-1][1] = max(clusters[-1][1], p + n)
            clusters[-1][2].append(i)
        else:
            clusters.append([p, p + n, [i]])
    for start, _, members in clusters:
        for i in members:
            if (spans[i][0] - start) % DTYPE_SIZE[spans[i][3]]:
                raise ValueError("clnorm: %s overlaps another tensor at an offset that is not "
                                 "a whole number of its elements" % _lib.SLOTS[spans[i][2]])
    mems = []
    placed = {}
    outputs = []
    try:
        for start, end, members in clusters:
            mem = _opencl.wrap_host(cl_context, start, end - start)
            mems.append(mem)
            for i in members:
                placed[i] = (mem, (spans[i][0] - start) // DTYPE_SIZE[spans[i][3]])
            if any(spans[i][4] for i in members):
                outputs.append((mem, end - start))
        args = [(spans[i][2],) + placed[i] for i in range(len(spans))]
        arr = (_lib.Arg * len(args))(*args)
        event = ctypes.c_void_p()
        st = _execute(plan.handle, direction, arr, len(args), None, 0, None,
                      ctypes.byref(event))
        if st:
            _errors.check(st, ctx.handle.ptr, _what(plan, direction))
        try:
            _opencl.sync_outputs(ctx.cl_queue, event, outputs)
        finally:
            _opencl.release_event(event)
    finally:
        for mem in mems:
            _opencl.release(mem)


def _run_device(ctx, plan, direction, tensors, outs, queue):
    import pyopencl as cl

    args = []
    waits = []
    for slot, a in tensors:
        if a.base_data is None:
            continue  # an empty array has no buffer, and the library reads nothing of it
        mem, offset = a.base_data.int_ptr, a.offset // a.dtype.itemsize
        args.append((slot, mem, offset))
        waits.extend(e.int_ptr for e in a.events)
    arr = (_lib.Arg * len(args))(*args)
    wait = (_lib.cl_event * len(waits))(*waits) if waits else None
    event = ctypes.c_void_p()
    st = _execute(plan.handle, direction, arr, len(args), queue.int_ptr, len(waits), wait,
                  ctypes.byref(event))
    if st:
        _errors.check(st, ctx.handle.ptr, _what(plan, direction))
    # pyopencl takes over the event's one reference (retain=False) and releases it.
    evt = cl.Event.from_int_ptr(event.value, retain=False)
    for o in outs:
        o.add_event(evt)


def _what(plan, direction):
    from .context import describe

    return "%s of %s" % ("forward" if direction == _lib.FORWARD else "backward",
                         describe(plan.key))
