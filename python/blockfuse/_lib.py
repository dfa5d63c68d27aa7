"""ctypes binding of libblockfuse_runtime.so's C surface (runtime/blockfuse_c.h)."""
import ctypes
import glob
import json
import os

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DTYPE_CODES = {"f32": 0, "f16": 1, "bf16": 2}


class BlockfuseError(RuntimeError):
    """A kernel that could not be made, loaded or run."""


class BadInput(BlockfuseError, ValueError):
    """A workload key, strategy or tensor that does not fit (the message names it)."""


class KernelUnavailable(BlockfuseError):
    """The kernel is neither prebuilt nor cached, and cannot be generated here (e.g. a GPU host without
    Halide: fill the cache on the build machine, see python -m blockfuse.prebuild)."""


class BfTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("dims", ctypes.c_int32),
                ("extents", ctypes.c_int64 * 4), ("strides", ctypes.c_int64 * 4)]


def library_path():
    """libblockfuse_runtime.so: $BLOCKFUSE_RUNTIME_LIB, else the carried one (.carry/), else a build tree's
    ($BLOCKFUSE_BUILD_DIR, build/, build-*/)."""
    env = os.environ.get("BLOCKFUSE_RUNTIME_LIB")
    if env:
        return env
    cands = [os.path.join(_REPO, ".carry", "libblockfuse_runtime.so")]
    if os.environ.get("BLOCKFUSE_BUILD_DIR"):
        cands.insert(0, os.path.join(os.environ["BLOCKFUSE_BUILD_DIR"], "runtime", "libblockfuse_runtime.so"))
    cands.append(os.path.join(_REPO, "build", "runtime", "libblockfuse_runtime.so"))
    cands += sorted(glob.glob(os.path.join(_REPO, "build-*", "runtime", "libblockfuse_runtime.so")))
    for c in cands:
        if os.path.exists(c):
            return c
    raise BlockfuseError("libblockfuse_runtime.so not found (looked at " + ", ".join(cands) +
                         "): build with ./run build, or set BLOCKFUSE_RUNTIME_LIB")


_lib = None


def lib():
    global _lib
    if _lib is not None:
        return _lib
    # The tuning records of this checkout, unless the caller chose others (the C side's default is the
    # tree the library was built from, which a GPU host does not have).
    if "BLOCKFUSE_TUNING_RECORDS" not in os.environ:
        recs = sorted(glob.glob(os.path.join(_REPO, "autotune", "records", "*.jsonl")))
        os.environ["BLOCKFUSE_TUNING_RECORDS"] = ":".join(recs)
    L = ctypes.CDLL(library_path(), mode=ctypes.RTLD_GLOBAL)
    L.bf_last_error.restype = ctypes.c_char_p
    L.bf_info.restype = ctypes.c_char_p
    L.bf_canonical.restype = ctypes.c_char_p
    L.bf_canonical.argtypes = [ctypes.c_char_p]
    L.bf_open.restype = ctypes.c_void_p
    L.bf_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                          ctypes.POINTER(ctypes.c_int)]
    L.bf_describe.restype = ctypes.c_char_p
    L.bf_describe.argtypes = [ctypes.c_void_p]
    L.bf_run.restype = ctypes.c_int
    L.bf_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(BfTensor), ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    L.bf_workspace_bytes.restype = ctypes.c_int64
    L.bf_workspace_bytes.argtypes = [ctypes.c_void_p]
    L.bf_run_with_workspace.restype = ctypes.c_int
    L.bf_run_with_workspace.argtypes = [ctypes.c_void_p, ctypes.POINTER(BfTensor), ctypes.c_int, ctypes.c_int,
                                        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
    L.bf_close.argtypes = [ctypes.c_void_p]
    _lib = L
    return L


def _error(code, what):
    msg = lib().bf_last_error().decode()
    if code == 2:
        return BadInput(f"{what}: {msg}")
    if "neither prebuilt" in msg:
        return KernelUnavailable(f"{what}: {msg}")
    return BlockfuseError(f"{what}: {msg}")


def info():
    return json.loads(lib().bf_info().decode())


def canonical(key):
    r = lib().bf_canonical(key.encode())
    if r is None:
        raise BadInput(lib().bf_last_error().decode())
    return r.decode()


class Kernel:
    """The kernel serving one workload key and strategy on one device, opened through the dispatcher.
    `tensors` lists what run() takes, in order: {name, dtype, extents (innermost first)}."""

    def __init__(self, key, strategy="", device="cuda", load=True):
        code = ctypes.c_int(0)
        h = lib().bf_open(key.encode(), (strategy or "").encode(), device.encode(), int(load), ctypes.byref(code))
        if not h:
            raise _error(code.value, f"blockfuse kernel for {key}" + (f" ({strategy})" if strategy else ""))
        self._h = h
        self.desc = json.loads(lib().bf_describe(h).decode())
        self.key = self.desc["key"]
        self.strategy = self.desc["strategy"]
        self.tensors = self.desc["tensors"]
        self.device = device
        self._lib = lib()
        self._workspace = None  # workspace_bytes(), once the first run measured it

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._lib.bf_close(h)
            self._h = None

    def arguments(self):
        """A ctypes array of len(tensors) BfTensor for run(), its dtype and dims filled in."""
        arr = (BfTensor * len(self.tensors))()
        for a, t in zip(arr, self.tensors):
            a.dtype = DTYPE_CODES[t["dtype"]]
            a.dims = len(t["extents"])
        return arr

    def workspace_bytes(self):
        """The device memory one call allocates for itself (hidden activations, split-K partial sums), in bytes:
        measured by the first run() on CUDA, 0 on the CPU; None before the first run."""
        if self._workspace is None:  # fixed once measured: asked of the library until then
            n = self._lib.bf_workspace_bytes(self._h)
            self._workspace = None if n < 0 else n
        return self._workspace

    def run(self, args, device_ordinal=0, stream=0, workspace=0, workspace_bytes=0):
        """workspace: a device pointer to at least workspace_bytes() bytes the call takes its own allocations
        from (it then allocates and frees nothing: CUDA-graph capture safe); 0: the driver's, through Halide's
        allocation cache."""
        rc = self._lib.bf_run_with_workspace(self._h, args, len(args), int(device_ordinal),
                                             ctypes.c_void_p(stream or None), ctypes.c_void_p(workspace or None),
                                             ctypes.c_uint64(workspace_bytes))
        if rc:
            raise _error(rc, f"blockfuse kernel {self.desc['kernel']} on {self.key}")
