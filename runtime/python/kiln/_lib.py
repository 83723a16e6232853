"""libkiln_runtime.so through ctypes: the C API of kiln/kiln.h, nothing else.

A thin ctypes layer rather than a compiled extension: the C API is kiln's stable contract, the
runtime needs no Python headers or ABI, and one package works with every CPython 3.8+. The
library is found, in order, at $KILN_RUNTIME_LIB, in $KILN_PREFIX/lib (a `cmake --install`
prefix), next to the `kiln` executable on PATH (../lib), and in this source tree's build/lib.
"""
import ctypes
import os
import shutil

_NAMES = ("libkiln_runtime.so.0", "libkiln_runtime.so")


def _candidates():
    env = os.environ.get("KILN_RUNTIME_LIB")
    if env:
        yield env
    dirs = []
    if os.environ.get("KILN_PREFIX"):
        dirs.append(os.path.join(os.environ["KILN_PREFIX"], "lib"))
    exe = os.environ.get("KILN_BIN") or shutil.which("kiln")
    if exe:
        dirs.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(exe))), "lib"))
    here = os.path.dirname(os.path.abspath(__file__))
    dirs.append(os.path.normpath(os.path.join(here, "..", "..", "..", "build", "lib")))
    for d in dirs:
        for n in _NAMES:
            yield os.path.join(d, n)


def load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            lib = ctypes.CDLL(path)
            _declare(lib)
            return lib, path
        tried.append(path)
    raise OSError("kiln: libkiln_runtime.so not found; set KILN_RUNTIME_LIB or KILN_PREFIX "
                  "(cmake --install build --prefix P). Tried: " + ", ".join(tried))


class LaunchProfile(ctypes.Structure):
    _fields_ = [("node", ctypes.c_char_p), ("kernel", ctypes.c_char_p), ("ms", ctypes.c_float)]


def _declare(lib):
    c = ctypes
    P = c.c_void_p
    sig = {
        "kiln_status_message": (c.c_char_p, [c.c_int]),
        "kiln_version": (c.c_char_p, []),
        "kiln_engine_load": (c.c_int, [c.c_char_p, c.POINTER(P)]),
        "kiln_engine_load_from_memory": (c.c_int, [c.c_void_p, c.c_size_t, c.POINTER(P)]),
        "kiln_engine_destroy": (None, [P]),
        "kiln_engine_num_io": (c.c_int32, [P]),
        "kiln_engine_io_name": (c.c_char_p, [P, c.c_int32]),
        "kiln_engine_io_dtype": (c.c_int, [P, c.c_int32]),
        "kiln_engine_io_rank": (c.c_int32, [P, c.c_int32]),
        "kiln_engine_io_shape": (c.POINTER(c.c_int64), [P, c.c_int32]),
        "kiln_engine_io_is_input": (c.c_int32, [P, c.c_int32]),
        "kiln_engine_target_arch": (c.c_char_p, [P]),
        "kiln_engine_route": (c.c_char_p, [P]),
        "kiln_engine_num_profiles": (c.c_int32, [P]),
        "kiln_context_create": (c.c_int, [P, c.POINTER(P)]),
        "kiln_context_set_profile": (c.c_int, [P, c.c_int32]),
        "kiln_context_set_tensor_address": (c.c_int, [P, c.c_char_p, c.c_void_p]),
        "kiln_context_set_input_shape": (c.c_int, [P, c.c_char_p, c.POINTER(c.c_int64), c.c_int32]),
        "kiln_context_get_tensor_shape": (c.c_int, [P, c.c_char_p, c.POINTER(c.c_int64), c.c_int32,
                                                    c.POINTER(c.c_int32)]),
        "kiln_context_enqueue": (c.c_int, [P, c.c_void_p]),
        "kiln_context_profile": (c.c_int, [P, c.c_void_p, c.POINTER(LaunchProfile), c.c_int32,
                                           c.POINTER(c.c_int32)]),
        "kiln_context_destroy": (None, [P]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
