"""cffi builder for ``vllm_cpp._vllm_ffi`` (out-of-line, API mode).

The cdef is derived from ``vllm_cpp/include/vllm.h`` at build time, so the
header stays the one copy of the C ABI: preprocessor lines, the ``VLLM_API``
export macro and the ``extern "C"`` guards are stripped, nothing is copied by
hand. On top of that come the ``extern "Python"`` trampolines through which
native code calls back into Python (token callback, logits processor).

Used by ``setup.py`` through ``cffi_modules=["build_ffi.py:ffibuilder"]``;
``python build_ffi.py`` builds the module in place for quick experiments
(it expects ``vllm_cpp/libvllm.so`` to exist already).
"""

import os
import re
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE_DIR = os.path.join(HERE, "vllm_cpp", "include")
HEADER = os.path.join(INCLUDE_DIR, "vllm.h")
MODULE_NAME = "vllm_cpp._vllm_ffi"

# Declarations of the Python functions native code calls back into. Their
# signatures mirror vllm_token_callback and vllm_logits_processor in vllm.h.
PYTHON_CALLBACKS = """
extern "Python" bool _vllm_token_trampoline(const char* delta_text, bool finished,
                                            void* user_data);
extern "Python" void _vllm_logits_trampoline(const int32_t* token_ids, int32_t n_token_ids,
                                             float* logits, int32_t vocab_size,
                                             void* user_data);
"""


def _strip_comments(text):
    """Remove C comments (keeping line structure) so directives are easy to spot."""

    def blank(match):
        return "\n" * match.group(0).count("\n")

    text = re.sub(r"/\*.*?\*/", blank, text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _join_continuations(text):
    return re.sub(r"\\\n", " ", text)


def cdef_from_header(text):
    """Turn the text of vllm.h into something cffi's cdef accepts.

    - blocks guarded by ``#ifdef __cplusplus`` (the ``extern "C" {`` / ``}``
      pair) are dropped entirely;
    - every other preprocessor line is dropped, except that integer
      ``#define VLLM_...`` constants are kept as ``#define NAME ...`` so the
      module can report the values the header was compiled with;
    - the ``VLLM_API`` export macro is removed from declarations.
    """
    text = _join_continuations(_strip_comments(text))
    out = []
    constants = []
    depth = 0  # nesting level inside a dropped __cplusplus block
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            directive = stripped[1:].strip()
            if depth:
                if re.match(r"if(n?def)?\b", directive):
                    depth += 1
                elif directive.startswith("endif"):
                    depth -= 1
                continue
            if re.match(r"ifdef\s+__cplusplus\b", directive) or re.match(
                r"if\s+defined\s*\(?\s*__cplusplus\s*\)?\s*$", directive
            ):
                depth = 1
                continue
            match = re.match(r"define\s+(VLLM_[A-Z0-9_]+)\s+(-?\d+)\s*$", directive)
            if match:
                constants.append("#define %s ..." % match.group(1))
            continue
        if depth:
            continue
        out.append(line)
    body = "\n".join(out)
    body = re.sub(r"\bVLLM_API\b", "", body)
    # Belt and braces: a stray guard outside an #ifdef block would break cdef.
    if re.search(r'extern\s+"C"', body):
        raise RuntimeError('vllm.h: an extern "C" block outside #ifdef __cplusplus')
    return "\n".join(constants) + "\n" + body


def make_ffibuilder():
    with open(HEADER, "r", encoding="utf-8") as f:
        header_text = f.read()

    builder = FFI()
    builder.cdef(cdef_from_header(header_text) + PYTHON_CALLBACKS)

    if sys.platform == "darwin":
        rpath = ["-Wl,-rpath,@loader_path"]
    elif sys.platform.startswith("win"):
        rpath = []
    else:
        # The extension finds libvllm.so next to itself, wherever the package
        # is installed (site-packages, an editable checkout, a wheel).
        rpath = ["-Wl,-rpath,$ORIGIN"]

    builder.set_source(
        MODULE_NAME,
        '#include "vllm.h"\n',
        include_dirs=[INCLUDE_DIR],
        libraries=["vllm"],
        # setup.py adds the directory holding the freshly built libvllm; this
        # default serves `python build_ffi.py` against vllm_cpp/libvllm.so.
        library_dirs=[os.path.join(HERE, "vllm_cpp")],
        extra_link_args=rpath,
    )
    return builder


ffibuilder = make_ffibuilder()

if __name__ == "__main__":
    import shutil

    built = ffibuilder.compile(tmpdir=os.path.join(HERE, "build", "ffi-inplace"), verbose=True)
    shutil.copy2(built, os.path.join(HERE, "vllm_cpp", os.path.basename(built)))
    print("built", os.path.join("vllm_cpp", os.path.basename(built)))
