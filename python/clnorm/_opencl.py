"""The few OpenCL calls the host path needs, through the same ICD loader libclnorm links
(libOpenCL.so.1), so devices are found exactly as the C library finds them.

Host arrays (NumPy, torch CPU) are wrapped in CL_MEM_USE_HOST_PTR buffers rather than
copied: on a CPU device (PoCL) the kernels then read and write the array's own memory, which
is what makes a Python call as fast as the C library's layer 1. The OpenCL specification only
promises that the host memory holds the results after a map of the buffer, so every output is
mapped and unmapped before the call returns (no copy where memory is shared; the driver's copy
where it is not, e.g. a discrete GPU).
"""
import ctypes
import ctypes.util

CL_SUCCESS = 0
CL_MEM_READ_WRITE = 1 << 0
CL_MEM_USE_HOST_PTR = 1 << 3
CL_MAP_READ = 1 << 0


def _load():
    for name in ("libOpenCL.so.1", ctypes.util.find_library("OpenCL")):
        if name:
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    raise ImportError("clnorm: no OpenCL ICD loader (libOpenCL.so.1) found")


_cl = _load()
_vp = ctypes.c_void_p
_cl.clCreateBuffer.restype = _vp
_cl.clCreateBuffer.argtypes = [_vp, ctypes.c_uint64, ctypes.c_size_t, _vp,
                               ctypes.POINTER(ctypes.c_int32)]
_cl.clReleaseMemObject.restype = ctypes.c_int32
_cl.clReleaseMemObject.argtypes = [_vp]
_cl.clEnqueueMapBuffer.restype = _vp
_cl.clEnqueueMapBuffer.argtypes = [_vp, _vp, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t,
                                   ctypes.c_size_t, ctypes.c_uint32, ctypes.POINTER(_vp),
                                   ctypes.POINTER(_vp), ctypes.POINTER(ctypes.c_int32)]
_cl.clEnqueueUnmapMemObject.restype = ctypes.c_int32
_cl.clEnqueueUnmapMemObject.argtypes = [_vp, _vp, _vp, ctypes.c_uint32, ctypes.POINTER(_vp),
                                        ctypes.POINTER(_vp)]
_cl.clWaitForEvents.restype = ctypes.c_int32
_cl.clWaitForEvents.argtypes = [ctypes.c_uint32, ctypes.POINTER(_vp)]
_cl.clReleaseEvent.restype = ctypes.c_int32
_cl.clReleaseEvent.argtypes = [_vp]


class OpenCLError(RuntimeError):
    pass


def _check(err, what):
    if err != CL_SUCCESS:
        raise OpenCLError("clnorm: %s failed with OpenCL error %d" % (what, err))


def wrap_host(cl_context, ptr, nbytes):
    """A buffer over nbytes of host memory at ptr (not copied). The caller releases it."""
    err = ctypes.c_int32(0)
    mem = _cl.clCreateBuffer(cl_context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, nbytes, ptr,
                             ctypes.byref(err))
    _check(err.value, "clCreateBuffer(CL_MEM_USE_HOST_PTR) of %d bytes" % nbytes)
    return mem


def release(mem):
    _cl.clReleaseMemObject(mem)


def release_event(event):
    _cl.clReleaseEvent(event)


def sync_outputs(queue, done, outputs):
    """Waits for `done` and makes the host memory of each (mem, nbytes) in outputs hold the
    results: a map for reading after `done`, then its unmap, then a wait for the unmaps."""
    err = ctypes.c_int32(0)
    wait = (_vp * 1)(done)
    unmapped = []
    try:
        for mem, nbytes in outputs:
            mapped_ev = _vp()
            ptr = _cl.clEnqueueMapBuffer(queue, mem, 0, CL_MAP_READ, 0, nbytes, 1, wait,
                                         ctypes.byref(mapped_ev), ctypes.byref(err))
            _check(err.value, "clEnqueueMapBuffer of an output")
            ev = _vp()
            rc = _cl.clEnqueueUnmapMemObject(queue, mem, ptr, 1, ctypes.byref(mapped_ev),
                                             ctypes.byref(ev))
            _cl.clReleaseEvent(mapped_ev)
            _check(rc, "clEnqueueUnmapMemObject of an output")
            unmapped.append(ev)
        if unmapped:
            _check(_cl.clWaitForEvents(len(unmapped), (_vp * len(unmapped))(*unmapped)),
                   "clWaitForEvents")
        else:
            _check(_cl.clWaitForEvents(1, wait), "clWaitForEvents")
    finally:
        for ev in unmapped:
            _cl.clReleaseEvent(ev)
