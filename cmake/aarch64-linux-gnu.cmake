# aarch64-linux-gnu.cmake: a CMake toolchain file for cross-building
# squarefree for 64-bit Arm Linux on a Debian 12 host, with Debian's cross
# compiler (gcc-aarch64-linux-gnu, libc6-dev-arm64-cross), and running what
# it builds under qemu-user (qemu-user), so that `ctest` runs the tests:
#
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# Libraries for aarch64 come from Debian's multiarch packages (liburing-dev:arm64
# after `dpkg --add-architecture arm64`, as scripts/deps.sh does): pkg-config
# reads only their .pc files, never the host's.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(SQF_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${SQF_CROSS_TRIPLE}-gcc)
# sqbench's optional C++ part: only with a cross C++ compiler (not installed
# by scripts/deps.sh, which builds no benchmark for aarch64).
find_program(SQF_CROSS_CXX ${SQF_CROSS_TRIPLE}-g++)
if(SQF_CROSS_CXX)
  set(CMAKE_CXX_COMPILER ${SQF_CROSS_CXX})
endif()

# Headers and libraries from the cross sysroot and the multiarch directories
# only; programs (pkg-config, qemu) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/${SQF_CROSS_TRIPLE})
set(CMAKE_LIBRARY_ARCHITECTURE ${SQF_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${SQF_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# CTest (and CMake's try_run) run the aarch64 programs under qemu-user, with
# the cross sysroot's dynamic loader and its own C library.  The library
# path matters: the loader looks in the host's /etc/ld.so.cache first, which
# lists the multiarch libc6:arm64 (pulled in by liburing-dev:arm64), another
# build of glibc than the sysroot's loader, and with that pair
# pthread_create never returns.  Other libraries (liburing.so.2) come from
# the multiarch directory.
find_program(SQF_QEMU qemu-${CMAKE_SYSTEM_PROCESSOR})
if(SQF_QEMU)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${SQF_QEMU} -L /usr/${SQF_CROSS_TRIPLE}
    -E LD_LIBRARY_PATH=/usr/${SQF_CROSS_TRIPLE}/lib)
endif()
