"""Build of vllm-cpp: libvllm (CMake) first, then the cffi extension against it.

``build_ext`` configures and builds the CMake target ``vllm`` of
``third_party/vllm.cpp`` (Release, -O3, no engine tests), copies
``libvllm.so`` into the package next to where the extension goes, and then
lets cffi build ``vllm_cpp._vllm_ffi`` (from ``build_ffi.py``), linked with an
rpath of ``$ORIGIN``. Works for ``pip install .``, ``pip install -e .`` and
``pip wheel .``.

Environment:
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default 2)
  VLLM_CPP_SANITIZE=1         -DVLLM_SANITIZE=ON (ASan/UBSan, own build tree;
                              Python then needs libasan and libstdc++ in
                              LD_PRELOAD, see README.md)
  VLLM_CPP_CMAKE_ARGS         extra arguments for the CMake configure step
  VLLM_CPP_ZIG_TARGET         build with zig for that target, e.g.
                              x86_64-linux-gnu.2.28 (a manylinux_2_28 wheel from
                              any Linux) or aarch64-linux-gnu.2.28 (cross-built);
                              VLLM_CPP_ZIG names zig (see zig_toolchain.py)
"""

import os
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, ROOT)  # zig_toolchain.py, beside this file

from zig_toolchain import ZigToolchain  # noqa: E402

ENGINE_DIR = os.path.join(ROOT, "third_party", "vllm.cpp")
PACKAGE = "vllm_cpp"

if sys.platform == "darwin":
    LIB_NAME = "libvllm.dylib"
elif sys.platform.startswith("win"):
    LIB_NAME = "vllm.dll"
else:
    LIB_NAME = "libvllm.so"
# Linker flag that drops the symbol table but the dynamic one (ld64 has no
# --strip-all; -x removes its local symbols).
STRIP_LINK_FLAG = "-Wl,-x" if sys.platform == "darwin" else "-Wl,--strip-all"
# The compiler the wheel is built with: zig for a named target, else the
# system's (cibuildwheel's manylinux images, macOS, source installs).
ZIG = ZigToolchain.from_environment()
if ZIG is not None and ZIG.cross:
    # bdist_wheel tags the wheel with the platform Python reports; this is
    # how CPython's own cross builds tell it the target's.
    os.environ["_PYTHON_HOST_PLATFORM"] = ZIG.host_platform


def _build_tool(name, bin_dir):
    """The `name` executable shipped by its PyPI package (a build requirement,
    whose module exposes its bin directory as `bin_dir`), else from PATH."""
    try:
        module = __import__(name)
        candidate = os.path.join(getattr(module, bin_dir), name)
        if os.path.isfile(candidate) or os.path.isfile(candidate + ".exe"):
            return candidate
    except Exception:  # noqa: BLE001 - fall back to PATH
        pass
    return shutil.which(name)


def _jobs():
    value = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "").strip()
    try:
        jobs = int(value) if value else 2
    except ValueError:
        jobs = 2
    return max(1, jobs)


# The compilers CMake and distutils look for when CC / CXX are unset.
_C_COMPILERS = ("cc", "gcc", "clang")
_CXX_COMPILERS = ("c++", "g++", "clang++")


def missing_compilers():
    """The kinds of compiler ("C", "C++") that cannot be found: named by
    CC / CXX (their first word), else none of the usual names on PATH. A
    build without them would fail deep in CMake's output, twice."""
    missing = []
    for kind, variable, names in (("C", "CC", _C_COMPILERS), ("C++", "CXX", _CXX_COMPILERS)):
        chosen = os.environ.get(variable, "").split()
        candidates = chosen[:1] or names
        if not any(shutil.which(name) for name in candidates):
            missing.append(kind)
    return missing


def missing_compiler_message(missing):
    return ("vllm-cpp: no %s compiler found: building from source compiles the engine. Install one "
            "(Debian/Ubuntu: apt-get install g++; Fedora: dnf install gcc-c++; Alpine: apk add g++; "
            "macOS: xcode-select --install), or set CC and CXX; or install a published wheel, "
            "which needs no compiler." % " or ".join(missing))


def _truthy(name):
    return os.environ.get(name, "").strip().lower() in ("1", "on", "yes", "true")


class BuildExt(build_ext):
    """Builds libvllm with CMake before the cffi extension."""

    def run(self):
        if ZIG is None and missing_compilers():
            sys.exit(missing_compiler_message(missing_compilers()))
        lib_path = self._build_libvllm()
        dest_dir = os.path.join(os.path.abspath(self.build_lib), PACKAGE)
        self._copy_lib(lib_path, dest_dir)
        self._libvllm_build_copy = os.path.join(dest_dir, LIB_NAME)
        for ext in self.extensions:
            # Link against the copy in the package dir: exactly what the
            # extension will find through its $ORIGIN rpath at run time.
            ext.library_dirs = [dest_dir] + [d for d in ext.library_dirs
                                             if os.path.abspath(d) != dest_dir]
            if not _truthy("VLLM_CPP_SANITIZE"):
                ext.extra_link_args = list(ext.extra_link_args) + [STRIP_LINK_FLAG]
        super().run()

    def build_extensions(self):
        if ZIG is not None:
            # The extension is plain C and links only libvllm: zig's cc with the
            # interpreter's compile flags, and a bare -shared link (the build
            # Python's library directories are the build machine's, not the target's).
            cc, _cxx = ZIG.write_wrappers(os.path.join(ROOT, ZIG.build_base))
            self.compiler.set_executables(compiler_so=[cc, *ZIG.FLAGS, *self.compiler.compiler_so[1:]],
                                          linker_so=[cc, "-shared"])
        super().build_extensions()

    # -- CMake -------------------------------------------------------------
    def _build_libvllm(self):
        cmake = _build_tool("cmake", "CMAKE_BIN_DIR")
        if not cmake:
            sys.exit("vllm-cpp: cmake not found (pip installs it as a build requirement; "
                     "with --no-build-isolation install `cmake` first)")
        ninja = _build_tool("ninja", "BIN_DIR")
        generator = "Ninja" if ninja else "Unix Makefiles"
        sanitize = _truthy("VLLM_CPP_SANITIZE")
        variant = "ninja" if ninja else "make"
        if sanitize:
            variant += "-sanitize"
        if ZIG is not None:
            if sanitize:
                sys.exit("vllm-cpp: VLLM_CPP_SANITIZE with VLLM_CPP_ZIG_TARGET is not supported "
                         "(sanitizer builds use the system compiler)")
            variant += "-zig-" + ZIG.target
        # A fixed directory under build/ (not build_temp, which editable
        # installs make a fresh temporary one): rebuilds are incremental.
        build_dir = os.path.join(ROOT, "build", "libvllm-" + variant)

        args = [
            cmake, "-S", ENGINE_DIR, "-B", build_dir, "-G", generator,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG",
            "-DCMAKE_C_FLAGS_RELEASE=-O3 -DNDEBUG",
            "-DVLLM_BUILD_TESTS=OFF",
            "-DVLLM_SANITIZE=%s" % ("ON" if sanitize else "OFF"),
            "-DVLLM_INCLUDE_DIR=%s" % os.path.join(ROOT, PACKAGE, "include"),
        ]
        if not sanitize:
            # Wheels ship without local symbols (a sanitizer build keeps them
            # for its reports); the exported C ABI is in the dynamic table.
            args.append("-DCMAKE_SHARED_LINKER_FLAGS_RELEASE=%s" % STRIP_LINK_FLAG)
        if ninja:
            # Always name the ninja in use: a cached one may have been in a
            # temporary build environment that is gone by now.
            args.append("-DCMAKE_MAKE_PROGRAM=%s" % ninja)
        if ZIG is not None:
            args += ZIG.cmake_args(*ZIG.write_wrappers(os.path.join(ROOT, ZIG.build_base)))
        args += shlex.split(os.environ.get("VLLM_CPP_CMAKE_ARGS", ""))

        cache = os.path.join(build_dir, "CMakeCache.txt")
        if os.path.exists(cache) and not self._cache_matches(cache):
            shutil.rmtree(build_dir, ignore_errors=True)
        os.makedirs(build_dir, exist_ok=True)
        try:
            self._run(args)
        except subprocess.CalledProcessError:
            # A stale cache (moved checkout, other compiler): start clean once.
            shutil.rmtree(build_dir, ignore_errors=True)
            os.makedirs(build_dir, exist_ok=True)
            self._run(args)
        self._run([cmake, "--build", build_dir, "--target", "vllm",
                   "--config", "Release", "--parallel", str(_jobs())])

        for root, _dirs, files in os.walk(build_dir):
            if LIB_NAME in files:
                return os.path.join(root, LIB_NAME)
        raise RuntimeError("vllm-cpp: CMake finished but %s is not in %s" % (LIB_NAME, build_dir))

    @staticmethod
    def _cache_matches(cache):
        try:
            with open(cache, "r", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("CMAKE_HOME_DIRECTORY:"):
                        home = line.split("=", 1)[1].strip()
                        return os.path.realpath(home) == os.path.realpath(ENGINE_DIR)
        except OSError:
            return False
        return False

    def _run(self, args):
        print("vllm-cpp: " + " ".join(shlex.quote(a) for a in args), flush=True)
        subprocess.check_call(args, cwd=ROOT)

    # -- placing libvllm next to the extension --------------------------------
    def _copy_lib(self, src, dest_dir):
        os.makedirs(dest_dir, exist_ok=True)
        dest = os.path.join(dest_dir, LIB_NAME)
        if os.path.abspath(src) != os.path.abspath(dest):
            tmp = dest + ".tmp"
            shutil.copy2(src, tmp)
            os.replace(tmp, dest)  # never rewrite a library a process has mapped

    def copy_extensions_to_source(self):
        # In-place / editable builds: the extension is copied into the source
        # package, so libvllm must go there too.
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        self._copy_lib(self._libvllm_build_copy, os.path.abspath(build_py.get_package_dir(PACKAGE)))

    def get_outputs(self):
        outputs = list(super().get_outputs())
        outputs.append(os.path.join(self.build_lib, PACKAGE, LIB_NAME))
        return outputs

    def get_output_mapping(self):
        base = getattr(super(), "get_output_mapping", None)
        mapping = dict(base() or {}) if base else {}
        if self.inplace:
            build_py = self.get_finalized_command("build_py")
            mapping[os.path.join(self.build_lib, PACKAGE, LIB_NAME)] = os.path.join(
                build_py.get_package_dir(PACKAGE), LIB_NAME)
        return mapping


class SDist(sdist):
    """Source distributions carry what a build needs (engine sources, the
    header, the cffi builder), the tests and the documentation, and nothing
    generated: in a git checkout the committed files of those folders, else
    (an sdist rebuilt from an sdist) every file but build outputs."""

    EXTRA_DIRS = ("third_party/vllm.cpp", "vllm_cpp/include", "examples", "tests", "docs")
    EXTRA_FILES = ("build_ffi.py", "zig_toolchain.py", "CMakeLists.txt", "README.md", "CHANGELOG.md", "LICENSE",
                   "mkdocs.yml", "pyproject.toml", "setup.py")
    SKIP_DIRS = {"build", ".git", "__pycache__"}

    def make_distribution(self):
        # setuptools builds the file list in egg_info (not through this
        # class's add_defaults), so extend it right before it is used.
        for name in self.EXTRA_FILES:
            if os.path.isfile(os.path.join(ROOT, name)):
                self.filelist.append(name)
        for top in self.EXTRA_DIRS:
            for name in self._files_under(top):
                self.filelist.append(name)
        self.filelist.sort()
        self.filelist.remove_duplicates()
        super().make_distribution()

    def _files_under(self, top):
        if os.path.isdir(os.path.join(ROOT, ".git")) or os.path.isfile(os.path.join(ROOT, ".git")):
            listed = subprocess.run(["git", "ls-files", "-z", "--", top], cwd=ROOT,
                                    capture_output=True, check=True).stdout.decode()
            return [name for name in listed.split("\0")
                    if name and os.path.isfile(os.path.join(ROOT, name))]
        found = []
        for root, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d not in self.SKIP_DIRS and not d.startswith("build"))
            found += [os.path.relpath(os.path.join(root, f), ROOT) for f in sorted(files)
                      if not f.endswith((".pyc", ".so", ".o"))]
        return found


OPTIONS = {
    # cffi compiles the extension for the stable ABI (Py_LIMITED_API), so
    # one wheel per platform serves CPython 3.9 and every later version.
    "bdist_wheel": {"py_limited_api": "cp39"},
}
if ZIG is not None:
    # Its own build/lib and temp folders: setuptools would otherwise take an
    # extension another compiler built there as up to date.
    OPTIONS["build"] = {"build_base": ZIG.build_base}

setup(
    cffi_modules=["build_ffi.py:ffibuilder"],
    cmdclass={"build_ext": BuildExt, "sdist": SDist},
    options=OPTIONS,
)
