# Cross-compiling for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu and the arm64
# libraries of Debian's multiarch (dpkg --add-architecture arm64; libssl-dev:arm64, ...).
# Tests run under qemu-aarch64 (Debian's qemu-user) as ctest's emulator. scripts/cross.sh uses
# this file; docs/harmonyos.md says which llama.cpp CPU flags a phone build should take.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian multiarch: arm64 libraries live in /usr/lib/aarch64-linux-gnu, headers in /usr/include
# (+ /usr/include/aarch64-linux-gnu); CMake searches lib/<arch> first with this set.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
find_program(EDGELLM_QEMU_AARCH64 qemu-aarch64)
if(EDGELLM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EDGELLM_QEMU_AARCH64})
endif()
