"""A Debian aarch64 CPython to run under qemu-aarch64, unpacked into a
folder of the checkout (build/aarch64-python) without installing anything:
tests/packaging/test_zig_wheels.py imports the cross-built aarch64 wheel with it.

    dpkg --add-architecture arm64 && apt-get update    # once, as root: apt then knows arm64 packages
    python tests/support/aarch64_python.py                      # ~7 MB of .deb files, unpacked with dpkg -x

The interpreter runs as
``qemu-aarch64 -L <aarch64 glibc> -E LD_LIBRARY_PATH=<its libraries> .../python3.N``;
the glibc comes from the cross toolchain's sysroot (Debian's
libc6-arm64-cross, /usr/aarch64-linux-gnu), as for the NEON tests.
"""

import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_DIR = ROOT / "build" / "aarch64-python"
#: The libraries the interpreter and the standard library modules a wheel
#: install and a completion use link to (glibc itself is the sysroot's).
LIBRARIES = ("zlib1g", "libexpat1", "libffi8", "libssl3", "libbz2-1.0", "liblzma5", "libuuid1", "libcrypt1")


class Aarch64Python:
    """An unpacked Debian aarch64 CPython, run under qemu-aarch64."""

    def __init__(self, directory, sysroot):
        self.directory = pathlib.Path(directory)
        self.sysroot = sysroot
        found = sorted(self.directory.glob("usr/bin/python3.*[0-9]"))
        self.executable = found[-1] if found else None

    def command(self, *args, pythonpath=()):
        """The qemu-aarch64 command line running this Python with `args`."""
        libs = [str(self.directory / d) for d in ("lib/aarch64-linux-gnu", "usr/lib/aarch64-linux-gnu")]
        command = ["qemu-aarch64", "-L", self.sysroot, "-E", "LD_LIBRARY_PATH=" + os.pathsep.join(libs)]
        if pythonpath:
            command += ["-E", "PYTHONPATH=" + os.pathsep.join(map(str, pythonpath))]
        return command + [str(self.executable), *map(str, args)]

    def version(self):
        """(major, minor) of the interpreter, read off its file name."""
        return tuple(int(x) for x in re.findall(r"\d+", self.executable.name)[:2])


def prepare(directory=DEFAULT_DIR):
    """Downloads the interpreter's packages with apt-get and unpacks them."""
    depends = subprocess.run(["apt-cache", "depends", "python3-minimal:arm64"], capture_output=True,
                             text=True, check=True).stdout
    match = re.search(r"Depends: (python3\.\d+-minimal)", depends)
    if not match:
        raise SystemExit("apt knows no python3-minimal:arm64: run `dpkg --add-architecture arm64 && apt-get update`")
    minor = match.group(1)[len("python"):-len("-minimal")]
    packages = ["python%s-minimal" % minor, "libpython%s-minimal" % minor, "libpython%s-stdlib" % minor]
    packages += LIBRARIES
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as debs:
        os.chmod(debs, 0o755)  # apt's sandbox user writes there
        subprocess.run(["apt-get", "download", *(p + ":arm64" for p in packages)], cwd=debs, check=True)
        for deb in sorted(pathlib.Path(debs).glob("*.deb")):
            subprocess.run(["dpkg", "-x", str(deb), str(directory)], check=True)
    return directory


if __name__ == "__main__":
    print("aarch64 Python unpacked into", prepare(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR))
