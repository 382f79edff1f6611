"""Large host results in blocks of memory already touched.

A result array allocated afresh is fresh pages, and the kernel zeroes each one on its first
touch: at 8192x768 float32 (25 MiB) that cost 3.7 ms on the 2-core VM, twice the layer norm
itself (bench/python/overhead.py, py_new). So a large result's block returns to this pool
when the last array over it dies, and the next result of that size takes it: a loop
`y = clnorm.layer_norm(x, ...)` touches fresh memory for its first two results only (the new
y is made while the old one is still alive). PyTorch's CUDA caching allocator does the same
for device memory.

The block is exposed through a ctypes array over its (page-aligned) address, which owns
nothing: every array or tensor made over it keeps that ctypes object alive, and a
weakref.finalize on it hands the block back when the last one dies. At most IDLE_LIMIT bytes
wait here; a block beyond that is simply freed.
"""
import ctypes
import threading
import weakref

IDLE_LIMIT = 512 << 20
_ALIGN = 4096  # PoCL writes a page-aligned CL_MEM_USE_HOST_PTR buffer ~15% faster (measured)


class HostPool:
    def __init__(self, np):
        self._np = np
        self._free = {}  # nbytes -> [raw uint8 arrays]
        self._idle = 0
        self._lock = threading.Lock()

    def buffer(self, nbytes):
        """A writable, page-aligned ctypes char array of nbytes (> 0) whose block comes back
        here when the ctypes object dies."""
        raw = None
        with self._lock:
            blocks = self._free.get(nbytes)
            if blocks:
                raw = blocks.pop()
                self._idle -= nbytes
        if raw is None:
            raw = self._np.empty(nbytes + _ALIGN, self._np.uint8)
        addr = raw.ctypes.data
        owner = (ctypes.c_char * nbytes).from_address(addr + (-addr) % _ALIGN)
        weakref.finalize(owner, self._give, nbytes, raw)
        return owner

    def idle_bytes(self):
        with self._lock:
            return self._idle

    def _give(self, nbytes, raw):
        with self._lock:
            if self._idle + nbytes <= IDLE_LIMIT:
                self._free.setdefault(nbytes, []).append(raw)
                self._idle += nbytes
