"""The three kinds of array a call takes: NumPy arrays, torch CPU tensors and pyopencl arrays.

Each kind says how to read an array's element type, shape and strides (in elements), where
its data is (a host pointer, or a cl_mem and an element offset), and how to make arrays of
its own kind (outputs, converted parameters). NumPy and torch are imported only when an
array of theirs is seen, so the package imports without them.
"""
import ctypes
import sys

from . import _lib

_addressof = ctypes.addressof
_c_char = ctypes.c_char

# Host outputs at least this large come from the pool of touched, page-aligned blocks
# (_hostpool): PoCL's kernels write a page-aligned CL_MEM_USE_HOST_PTR buffer about 15% faster
# at 8192x768 float32 (measured; NumPy's own large allocations sit 16 bytes past a page), and
# fresh pages cost more than the kernel.
_POOL_FROM = 1 << 16
_pool = None


def _host_pool(np):
    global _pool
    if _pool is None:
        from ._hostpool import HostPool

        _pool = HostPool(np)
    return _pool


class _Kind:
    name = "?"
    on_device = False
    dtypes = {}  # the kind's dtype object -> clnorm dtype code
    names = {}   # clnorm dtype code -> the kind's dtype object

    def is_host(self, a):
        """Is a's memory the host's (a pointer the library can take)?"""
        return True

    def matches(self, a, code):
        """Is a an array of this kind with elements of clnorm type `code`?"""
        return self.owns(a) and self.dtypes.get(a.dtype) == code

    def check_out(self, a, name):
        """Raises when the library must not write a (an out= array)."""

    def written(self, a):
        """Tells a's owner that the library wrote a (an out= array) in place."""

    def code(self, a):
        """The clnorm storage type of a's elements, or a TypeError naming the supported ones."""
        c = self.dtypes.get(a.dtype)
        if c is None:
            raise TypeError("clnorm: %s of dtype %s is not supported (supported: %s)"
                            % (self.name, a.dtype, ", ".join(str(d) for d in self.dtypes)))
        return c


class NumpyKind(_Kind):
    name = "numpy array"

    def __init__(self, np):
        self.np = np
        self.dtypes = {np.dtype(np.float32): _lib.F32, np.dtype(np.float16): _lib.F16,
                       np.dtype(np.float64): _lib.F64}
        self.names = {v: k for k, v in self.dtypes.items()}

    def owns(self, a):
        return isinstance(a, self.np.ndarray)

    def strides(self, a):
        item = a.itemsize
        if any(s % item for s in a.strides):
            return None  # a byte stride that is not whole elements: only a copy can run
        return tuple(s // item for s in a.strides)

    def contiguous(self, a):
        return self.np.ascontiguousarray(a)

    def check_out(self, a, name):
        if not a.flags.writeable:
            raise ValueError("clnorm: out (%s) is read-only" % name)

    def ptr(self, a):
        # A ctypes view of the buffer is 3-4x cheaper than a.ctypes.data (an object per
        # call) on the hot path; it needs a writable contiguous array, else the general way.
        try:
            return _addressof(_c_char.from_buffer(a))
        except (TypeError, ValueError, BufferError):
            return a.ctypes.data

    def is_contiguous(self, a):
        return a.flags.c_contiguous

    def size(self, a):
        return a.size

    def empty(self, shape, code, like, order=None):
        np = self.np
        dtype = self.names[code]
        phys = shape if order is None else tuple(shape[i] for i in order)
        nbytes = dtype.itemsize
        for n in phys:
            nbytes *= n
        if nbytes >= _POOL_FROM:
            out = np.frombuffer(_host_pool(np).buffer(nbytes), dtype).reshape(phys)
        else:
            out = np.empty(phys, dtype)
        return out if order is None else out.transpose(_inverse(order))

    def convert(self, p, code, like, what):
        """p (an array of any kind, or a sequence) as a contiguous array of this kind."""
        if not isinstance(p, self.np.ndarray):
            p = _to_numpy(p, what)
        _real(p.dtype.kind, p.dtype, what)
        return self.np.ascontiguousarray(p, dtype=self.names[code])


class TorchKind(_Kind):
    name = "torch tensor"

    def __init__(self, torch):
        self.torch = torch
        self.dtypes = {torch.float32: _lib.F32, torch.float16: _lib.F16,
                       torch.bfloat16: _lib.BF16, torch.float64: _lib.F64}
        self.names = {v: k for k, v in self.dtypes.items()}
        for d in self.dtypes:
            _TORCH_SIZES[d] = torch.empty(0, dtype=d).element_size()

    def owns(self, a):
        return isinstance(a, self.torch.Tensor)

    def _require_strided(self, a):
        if a.layout != self.torch.strided:
            raise TypeError("clnorm: torch tensors must be dense (strided); this one is %s"
                            % a.layout)

    def code(self, a):
        self._require_strided(a)
        if not a.is_cpu:
            raise TypeError("clnorm: torch tensors must be on the CPU (this one is on %s); "
                            "for a device tensor, use a pyopencl array" % a.device)
        return _Kind.code(self, a)

    def is_host(self, a):
        return a.is_cpu

    def matches(self, a, code):
        return _Kind.matches(self, a, code) and a.layout == self.torch.strided and not _lazy(a)

    def strides(self, a):
        self._require_strided(a)
        if _lazy(a):
            return None  # a negated or conjugated view: its memory is not its values
        return tuple(a.stride())

    def contiguous(self, a):
        return a.resolve_neg().resolve_conj().contiguous()

    def check_out(self, a, name):
        torch = self.torch
        if _lazy(a):
            raise ValueError("clnorm: out (%s) is a negated or conjugated view" % name)
        if a.requires_grad and torch.is_grad_enabled():
            # as torch refuses an in-place operation on a tensor that requires grad
            raise ValueError("clnorm: out (%s) requires grad: clnorm writes it in place, which "
                             "autograd cannot follow; pass one that does not, or call under "
                             "torch.no_grad()" % name)

    def written(self, a):
        # Bumps a's version counter (shared with a detached alias, whose metadata alone the
        # in-place restride changes), as torch's own in-place operations do: autograd then
        # refuses a backward that saved a's old contents instead of computing it from the new.
        d = a.detach()
        d.as_strided_(d.size(), d.stride(), d.storage_offset())

    def ptr(self, a):
        return a.data_ptr()

    def is_contiguous(self, a):
        return a.is_contiguous() and not _lazy(a)

    def size(self, a):
        return a.numel()

    def empty(self, shape, code, like, order=None):
        torch = self.torch
        dtype = self.names[code]
        phys = shape if order is None else tuple(shape[i] for i in order)
        nbytes = dtype.itemsize if hasattr(dtype, "itemsize") else _TORCH_SIZES[dtype]
        for n in phys:
            nbytes *= n
        if nbytes >= _POOL_FROM:
            import numpy

            out = torch.frombuffer(_host_pool(numpy).buffer(nbytes), dtype=dtype).view(phys)
        else:
            out = torch.empty(phys, dtype=dtype)
        return out if order is None else out.permute(_inverse(order))

    def convert(self, p, code, like, what):
        torch = self.torch
        if not isinstance(p, torch.Tensor):
            p = torch.as_tensor(_to_numpy(p, what))
        if p.layout != torch.strided:
            raise TypeError("clnorm: %s must be a dense (strided) tensor (got %s)"
                            % (what, p.layout))
        _real("c" if p.is_complex() else "f", p.dtype, what)
        # .to() and .contiguous() keep the autograd graph: gradients reach the caller's tensor.
        return p.resolve_neg().resolve_conj().to(dtype=self.names[code]).contiguous()


_TORCH_SIZES = {}  # dtype -> bytes, filled by TorchKind (torch 1.13 dtypes have no itemsize)


def _lazy(t):
    """Is t a torch view whose negation or conjugation is pending (torch._neg_view, .conj())?
    Its memory does not hold its values."""
    return t.is_neg() or t.is_conj()


def _real(kind_char, dtype, what):
    """A TypeError for an array that does not hold real numbers (complex, strings, objects):
    converting it would drop or invent values."""
    if kind_char not in "fiub":
        raise TypeError("clnorm: %s must hold real numbers (got dtype %s)" % (what, dtype))


class ClArrayKind(_Kind):
    name = "pyopencl array"
    on_device = True

    def __init__(self, cla, np):
        self.cla = cla
        self.np = np
        self.dtypes = {np.dtype(np.float32): _lib.F32, np.dtype(np.float16): _lib.F16,
                       np.dtype(np.float64): _lib.F64}
        self.names = {v: k for k, v in self.dtypes.items()}

    def owns(self, a):
        return isinstance(a, self.cla.Array)

    def strides(self, a):
        item = a.dtype.itemsize
        if any(s % item for s in a.strides) or a.offset % item:
            return None
        return tuple(s // item for s in a.strides)

    def contiguous(self, a):
        # A strided device array would need a gather kernel or a trip through the host, which
        # would break "stays on the device": refuse it, naming what to do.
        raise ValueError("clnorm: this pyopencl array's layout (shape %s, strides %s) is not "
                         "one clnorm reads in place (rows, or samples, of contiguous elements "
                         "at a constant stride); pass a contiguous copy"
                         % (a.shape, a.strides))

    def is_contiguous(self, a):
        return a.flags.c_contiguous

    def size(self, a):
        return a.size

    def empty(self, shape, code, like, order=None):
        if order is not None:
            raise ValueError("clnorm: pyopencl arrays are read and written in their own layout; "
                             "a channels-last result needs channels_last=True")
        return self.cla.empty(like.queue, shape, self.names[code])

    def convert(self, p, code, like, what):
        dtype = self.names[code]
        if isinstance(p, self.cla.Array):
            if p.context.int_ptr != like.context.int_ptr:
                raise ValueError("clnorm: %s is a pyopencl array of another OpenCL context "
                                 "than x" % what)
            if p.dtype != dtype:
                p = p.astype(dtype)
            if not p.flags.c_contiguous:
                self.contiguous(p)
            return p
        host = self.np.ascontiguousarray(_to_numpy(p, what), dtype=dtype)
        return self.cla.to_device(like.queue, host)


def _inverse(order):
    inv = [0] * len(order)
    for i, o in enumerate(order):
        inv[o] = i
    return tuple(inv)


def _to_numpy(p, what):
    np = sys.modules.get("numpy")
    if np is None:
        import numpy as np
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(p, torch.Tensor):
        return p.detach().cpu().float().numpy() if p.dtype == torch.bfloat16 else \
            p.detach().cpu().numpy()
    cla = sys.modules.get("pyopencl.array")
    if cla is not None and isinstance(p, cla.Array):
        return p.get()
    try:
        return np.asarray(p)
    except Exception as e:
        raise TypeError("clnorm: %s must be an array (got %s)" % (what, type(p).__name__)) from e


_kinds = []


def _known_kinds():
    # Built lazily: a kind exists once its module is imported by someone (the caller's array
    # could not exist otherwise).
    if len(_kinds) < 3:
        _kinds.clear()
        np = sys.modules.get("numpy")
        torch = sys.modules.get("torch")
        cla = sys.modules.get("pyopencl.array")
        if np is not None:
            _kinds.append(NumpyKind(np))
        if torch is not None:
            _kinds.append(TorchKind(torch))
        if cla is not None and np is not None:
            _kinds.append(ClArrayKind(cla, np))
    return _kinds


_by_type = {}


def kind_of(a):
    """The kind of x (NumPy, torch or pyopencl), or a TypeError."""
    k = _by_type.get(type(a))
    if k is not None:
        return k
    for k in _known_kinds():
        if k.owns(a):
            _by_type[type(a)] = k
            return k
    raise TypeError("clnorm: x must be a NumPy array, a torch CPU tensor or a "
                    "pyopencl.array.Array (got %s)" % type(a).__name__)


def row_layout(shape, strides, k):
    """(rows, cols, row_stride) when the trailing k dims are contiguous and the leading dims
    step by one constant stride (any such view of a matrix, e.g. x[:, :768] or x[::2]), else
    None. row_stride is in elements; rows 0 or 1 give stride cols."""
    if strides is None:
        return None
    n = len(shape)
    if 0 in shape:  # nothing to read; NumPy gives empty arrays strides of 0
        rows = cols = 1
        for i, d in enumerate(shape):
            if i < n - k:
                rows *= d
            else:
                cols *= d
        return rows, cols, cols
    cols = 1
    expect = 1
    for i in range(n - 1, n - 1 - k, -1):
        if shape[i] != 1 and strides[i] != expect:
            return None
        expect *= shape[i]
        cols *= shape[i]
    rows = 1
    row_stride = None
    for i in range(n - 1 - k, -1, -1):
        size = shape[i]
        rows *= size
        if size == 1:
            continue
        if row_stride is None:
            row_stride = strides[i]
            expect = strides[i] * size
        elif strides[i] != expect:
            return None
        else:
            expect = strides[i] * size
    if rows <= 1 or row_stride is None:
        return rows, cols, cols
    if row_stride < cols:
        return None  # overlapping rows (a broadcast view): the library needs stride >= cols
    return rows, cols, row_stride

