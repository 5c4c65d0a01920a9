"""Building libvllm and the cffi extension with zig for a chosen glibc.

A Linux wheel is usable wherever the glibc and C++ runtime it links are at
least as old as the ones it was built against; auditwheel names that floor
(manylinux_2_28: glibc 2.28, libstdc++ of GCC 8). A compiler on a newer
system links its newer symbol versions, so on this machine (glibc 2.36,
GCC 12) `pip wheel .` gives manylinux_2_35. zig's `cc`/`c++` link against
stub libraries of the glibc version named in the target triple and link
LLVM's libc++ statically (hidden behind libvllm's version script), so
`VLLM_CPP_ZIG_TARGET=x86_64-linux-gnu.2.28` gives a manylinux_2_28 wheel
without a manylinux image, and `aarch64-linux-gnu.2.28` cross-builds the
same for 64-bit ARM.

setup.py asks `ZigToolchain.from_environment()`:
  VLLM_CPP_ZIG_TARGET  the target, ARCH-linux-gnu.GLIBC (ARCH x86_64 or aarch64)
  VLLM_CPP_ZIG         the zig executable (default: the `ziglang` PyPI
                       package's, then `zig` on PATH); with build isolation
                       the outer environment's ziglang is not importable, so
                       name it here
"""

import os
import platform
import re
import shutil
import sys

TARGET_PATTERN = re.compile(r"(x86_64|aarch64)-linux-gnu\.2\.(\d+)")
#: zig's oldest glibc stubs; older floors are not worth a wheel tag anyway.
OLDEST_GLIBC_MINOR = 17


def find_zig():
    """The zig executable: $VLLM_CPP_ZIG, the ziglang package's, or PATH's."""
    named = os.environ.get("VLLM_CPP_ZIG", "").strip()
    if named:
        return named if os.path.isfile(named) else None
    try:
        import ziglang  # the PyPI package ships the whole toolchain

        candidate = os.path.join(os.path.dirname(ziglang.__file__), "zig")
        if os.path.isfile(candidate):
            return candidate
    except ImportError:
        pass
    return shutil.which("zig")


class ZigToolchain:
    """zig as the C and C++ compiler for one target triple."""

    def __init__(self, zig, target):
        match = TARGET_PATTERN.fullmatch(target)
        if not match or int(match.group(2)) < OLDEST_GLIBC_MINOR:
            raise SystemExit("vllm-cpp: VLLM_CPP_ZIG_TARGET=%r is not ARCH-linux-gnu.2.N with ARCH x86_64 or "
                             "aarch64 and N >= %d (e.g. x86_64-linux-gnu.2.28)" % (target, OLDEST_GLIBC_MINOR))
        if not sys.platform.startswith("linux"):
            raise SystemExit("vllm-cpp: VLLM_CPP_ZIG_TARGET builds Linux wheels on Linux only")
        self.zig = zig
        self.target = target
        self.arch = match.group(1)

    @classmethod
    def from_environment(cls):
        """The toolchain VLLM_CPP_ZIG_TARGET asks for, or None (the default compiler)."""
        target = os.environ.get("VLLM_CPP_ZIG_TARGET", "").strip()
        if not target:
            return None
        zig = find_zig()
        if not zig:
            raise SystemExit("vllm-cpp: VLLM_CPP_ZIG_TARGET is set but no zig was found: `pip install ziglang` "
                             "(with build isolation, name its executable in VLLM_CPP_ZIG)")
        return cls(zig, target)

    @property
    def cross(self):
        return self.arch != platform.machine()

    @property
    def build_base(self):
        """setuptools' build folder for this target (relative to the checkout);
        the compiler wrappers live there too."""
        return os.path.join("build", "zig-" + self.target)

    @property
    def host_platform(self):
        """The value of _PYTHON_HOST_PLATFORM that tags the wheel for the target."""
        return "linux-" + self.arch

    #: Every compile's flags. -mcpu=baseline: the plain instruction set of the
    #: architecture (zig otherwise tunes for the build machine when it is the
    #: target); the engine's SIMD files add their own flags and are only
    #: called after a run-time check. -fomit-frame-pointer: zig keeps frame
    #: pointers in optimized code, GCC (the other builds) does not.
    FLAGS = ("-mcpu=baseline", "-fomit-frame-pointer")

    def write_wrappers(self, directory):
        """Writes `zig-cc` and `zig-c++` scripts there (CMake and setuptools want
        one executable per compiler, not `zig cc -target ...`); returns their
        paths. They carry only the target, which names the build folder: the
        flags go on the command lines (FLAGS), so changing one rebuilds."""
        os.makedirs(directory, exist_ok=True)
        paths = []
        for tool in ("cc", "c++"):
            path = os.path.join(directory, "zig-" + tool)
            text = '#!/bin/sh\nexec "%s" %s -target %s "$@"\n' % (self.zig, tool, self.target)
            if not os.path.exists(path) or open(path).read() != text:
                with open(path, "w") as f:
                    f.write(text)
                os.chmod(path, 0o755)
            paths.append(path)
        return tuple(paths)

    def cmake_args(self, cc, cxx):
        flags = " ".join(self.FLAGS)
        args = ["-DCMAKE_C_COMPILER=" + cc, "-DCMAKE_CXX_COMPILER=" + cxx,
                "-DCMAKE_C_FLAGS=" + flags, "-DCMAKE_CXX_FLAGS=" + flags]
        if self.arch == "aarch64":
            # zig reads -march as a CPU name in its own syntax (CPU+feature).
            args.append("-DVLLM_ARM_DOTPROD_FLAGS=-mcpu=generic+v8_2a+dotprod")
        if self.cross:
            # CMake then takes the target's processor (the engine picks its
            # kernels by it) and does not try to run what it compiles.
            args += ["-DCMAKE_SYSTEM_NAME=Linux", "-DCMAKE_SYSTEM_PROCESSOR=" + self.arch]
        return args
