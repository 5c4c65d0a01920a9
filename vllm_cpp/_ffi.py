"""The compiled cffi module and the conversions every call needs.

This is the only module that touches ``ffi``/``lib`` directly for strings and
statuses: native status -> exception (with ``vllm_last_error()``), Python
str -> NUL-free UTF-8 bytes, native bytes -> str (strict UTF-8), and the
ABI version check.
"""

import os
import threading
from typing import Optional, Union

from .errors import (
    AbiMismatchError,
    InteriorNulError,
    InvalidConfigurationError,
    InvalidUtf8Error,
    error_for_status,
)

def _installed_copy_shadowed() -> Optional[str]:
    """Where the installed package is, when this import found another
    ``vllm_cpp/`` first (a source checkout's, without its compiled module:
    Python puts the current directory, or the script's, first on sys.path);
    None when no installed copy with a compiled module exists elsewhere."""
    import importlib.metadata

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        files = importlib.metadata.distribution("vllm-cpp").files or ()
    except importlib.metadata.PackageNotFoundError:
        return None
    for name in files:
        if name.name.startswith("_vllm_ffi"):
            package_dir = os.path.dirname(os.path.abspath(str(name.locate())))
            if package_dir != here and os.path.isfile(str(name.locate())):
                return package_dir
    return None


try:
    from ._vllm_ffi import ffi, lib
except ImportError as exc:  # pragma: no cover - depends on the installation
    installed = _installed_copy_shadowed()
    if installed is not None:
        raise ImportError(
            "vllm_cpp: imported the vllm_cpp/ folder of a source checkout (%s), which has no compiled "
            "module, instead of the installed package (%s): Python looks in the current directory "
            "first. Run from another directory, or install the checkout in editable mode "
            "(`pip install -e .`), which builds the compiled module into it."
            % (os.path.dirname(os.path.abspath(__file__)), installed)
        ) from exc
    raise ImportError(
        "vllm_cpp: the native module vllm_cpp._vllm_ffi could not be imported (%s). "
        "Build and install the package with `pip install .` (or `pip install -e .` "
        "for development); it compiles libvllm and the cffi extension." % exc
    ) from exc

#: The C ABI version these bindings were written against.
EXPECTED_ABI_VERSION = 10

VLLM_OK = 0

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


def native_abi_version() -> int:
    """``vllm_abi_version()`` of the loaded libvllm."""
    return int(lib.vllm_abi_version())


def check_abi() -> None:
    """Raise :class:`AbiMismatchError` unless libvllm speaks ABI v10."""
    actual = native_abi_version()
    if actual != EXPECTED_ABI_VERSION:
        raise AbiMismatchError(EXPECTED_ABI_VERSION, actual)


def last_error() -> str:
    """The calling thread's ``vllm_last_error()``.

    Undecodable bytes are replaced rather than raised: an error message must
    never hide the error it describes.
    """
    ptr = lib.vllm_last_error()
    if ptr == ffi.NULL:
        return ""
    return ffi.string(ptr).decode("utf-8", errors="replace")


def check(status: int) -> None:
    """Raise the exception for a non-OK native status."""
    if status != VLLM_OK:
        raise error_for_status(int(status), last_error())


def fspath(value, field: str):
    """A path given as str, bytes or ``os.PathLike`` as str or bytes; any
    other type is :class:`InvalidConfigurationError` naming ``field``."""
    if isinstance(value, (str, bytes)):
        return value
    try:
        return os.fspath(value)
    except TypeError:
        raise InvalidConfigurationError(
            "%s must be a str or os.PathLike, not %s" % (field, type(value).__name__)
        ) from None


def encode_str(value: Union[str, "os.PathLike[str]"], field: str, *, path: bool = False) -> bytes:
    """``value`` as NUL-free UTF-8 bytes for a ``const char*`` argument.

    Paths (``path=True``) may also be ``os.PathLike`` or ``bytes``. Any other
    type is :class:`InvalidConfigurationError`; a NUL character is
    :class:`InteriorNulError` naming ``field``.
    """
    if path:
        value = fspath(value, field)
    if isinstance(value, bytes) and path:
        data = value
    elif isinstance(value, str):
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidConfigurationError(
                "%s cannot be encoded as UTF-8: %s" % (field, exc)
            ) from None
    else:
        raise InvalidConfigurationError(
            "%s must be a str, not %s" % (field, type(value).__name__)
        )
    if b"\0" in data:
        raise InteriorNulError(field)
    return data


def decode_bytes(data: bytes, field: str) -> str:
    """Strict UTF-8 decoding of native bytes; :class:`InvalidUtf8Error` naming
    ``field`` when they are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidUtf8Error(field, data, str(exc)) from None


def decode_cstr(ptr, field: str) -> Optional[str]:
    """A native ``const char*`` as str (``None`` for NULL)."""
    if ptr == ffi.NULL:
        return None
    return decode_bytes(ffi.string(ptr), field)


class HandleRegistry:
    """The Python objects native code calls back into, by key.

    ``register(obj)`` returns the ``void* user_data`` to pass: a key, not a
    pointer to anything. The trampolines find the object with ``lookup``;
    ``release(handle)`` drops it once the native side is done with it, or no
    longer needs Python to answer (a request freed from its own callback:
    the engine may run its logits processor once more before it drops the
    request). A call for a released key finds ``None`` and is ignored, so an
    early release can never reach freed memory.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._live = {}
        self._next_key = 1

    def register(self, obj):
        with self._lock:
            key = self._next_key
            self._next_key += 1
            self._live[key] = obj
        return ffi.cast("void*", key)

    def lookup(self, user_data):
        """The object registered under ``user_data``, or None once released."""
        return self._live.get(int(ffi.cast("uintptr_t", user_data)))

    def release(self, handle) -> None:
        if handle is None:
            return
        key = int(ffi.cast("uintptr_t", handle))
        with self._lock:
            self._live.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._live)


handles = HandleRegistry()
