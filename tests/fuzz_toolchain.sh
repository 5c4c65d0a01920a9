#!/usr/bin/env bash
# Part of the README's test command: installs clang with libFuzzer (Debian's
# clang and libclang-rt-14-dev) where clang++ is missing and apt-get can
# install packages (as root, or through passwordless sudo), so
# tests/unit/test_fuzz.py builds the engine's fuzz targets and runs each one's
# smoke instead of skipping. It never fails the command it is part of: where
# it cannot install, it says so and test_fuzz.py skips, naming what is
# missing.
packages=(clang libclang-rt-14-dev)
if command -v clang++ >/dev/null 2>&1; then
  exit 0
fi
as_root=()
if [ "$(id -u)" != 0 ]; then
  as_root=(sudo -n)  # a CI runner's passwordless sudo; elsewhere it fails, and the module skips
fi
if ! command -v apt-get >/dev/null 2>&1 || ! "${as_root[@]}" true >/dev/null 2>&1; then
  echo "fuzz_toolchain.sh: clang++ is missing and apt-get cannot run as root here; tests/unit/test_fuzz.py will skip" >&2
  exit 0
fi
# A fresh machine may have no package lists yet: update only when the install fails.
if ! "${as_root[@]}" apt-get install -y -q "${packages[@]}" >/dev/null 2>&1; then
  "${as_root[@]}" apt-get update -q >/dev/null 2>&1 && "${as_root[@]}" apt-get install -y -q "${packages[@]}" >/dev/null 2>&1 \
    || echo "fuzz_toolchain.sh: could not install ${packages[*]}; tests/unit/test_fuzz.py will skip" >&2
fi
exit 0
