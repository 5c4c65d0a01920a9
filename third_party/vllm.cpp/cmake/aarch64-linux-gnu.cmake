# Cross-compiling the engine for 64-bit ARM Linux (the NEON kernels) from
# another Linux machine, with Debian's / Ubuntu's cross toolchain:
#
#   apt-get install g++-aarch64-linux-gnu qemu-user
#   cmake -S third_party/vllm.cpp -B build-arm \
#         -DCMAKE_TOOLCHAIN_FILE=third_party/vllm.cpp/cmake/aarch64-linux-gnu.cmake
#   cmake --build build-arm -j2
#   qemu-aarch64 -L /usr/aarch64-linux-gnu build-arm/test_kernels
#
# Another triple's compilers can be named with -DCROSS_PREFIX=...-.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(NOT DEFINED CROSS_PREFIX)
  set(CROSS_PREFIX aarch64-linux-gnu-)
endif()
set(CMAKE_C_COMPILER ${CROSS_PREFIX}gcc)
set(CMAKE_CXX_COMPILER ${CROSS_PREFIX}g++)

# Headers and libraries of the target only; programs of the build machine.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# How to run the target's programs here (user-mode emulation), for tools
# that honour it (ctest, try_run).
find_program(VLLM_QEMU_AARCH64 qemu-aarch64)
if(VLLM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${VLLM_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
endif()
