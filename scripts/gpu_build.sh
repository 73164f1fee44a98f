#!/usr/bin/env bash
# Configures (Release) and builds attnmt against a CUDA LibTorch, e.g. the one inside a pip
# `torch` wheel, so that `--device cuda` works. Arguments go to `cmake --build` (e.g. --target attnmt).
#
#   TORCH_PREFIX         LibTorch's CMake prefix (default: python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
#   ATTNMT_PREFIX_PATH   extra prefixes for yaml-cpp, spdlog+fmt, SentencePiece, CLI11, nlohmann-json,
#                        zlib, Catch2 when they are not in /usr, ':'-separated (e.g. /opt/deps/usr)
#   BUILD_DIR            build directory (default: build-cuda)
#   ATTNMT_BUILD_TESTS   ON | OFF (default: ON; OFF needs no Catch2)
#   CMAKE_ARGS           more configure arguments, word-split
#   JOBS                 parallel jobs (default: nproc)
#
# The libraries in ATTNMT_PREFIX_PATH are found at run time through the build tree's RPATH; add
# their lib dir to LD_LIBRARY_PATH when running an installed or moved binary.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_prefix=${TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')}
# Torch_DIR pins this LibTorch even where another one (a CPU build in /usr) is also on the paths.
prefixes=$torch_prefix
[ -n "${ATTNMT_PREFIX_PATH:-}" ] && prefixes="${ATTNMT_PREFIX_PATH//:/;};$prefixes"
build_dir=${BUILD_DIR:-build-cuda}
generator=()
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
# FindCUDAToolkit (called by TorchConfig.cmake) needs nvcc; a CUDA install usually lives here.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
# libstdc++: the process must use ONE shared libstdc++, and it must come first.
# - pip's LibTorch exports copies of some libstdc++ functions of its own; a program that lists
#   libtorch before libstdc++.so.6 calls those, and std::filesystem::remove_all (the tests use
#   it) then jumps to address 0. So libstdc++.so.6 is linked first, ahead of LibTorch.
# - SentencePiece is loaded with RTLD_DEEPBIND (src/data/spm_backend.h): a compiler that links
#   libstdc++ statically by default (e.g. a self-built GCC without libstdc++.so) puts a second
#   std::cerr into the program and SentencePiece crashes on its first log line; then -nostdlib++.
link_args=()
cxx=${CXX:-$(command -v c++ || command -v g++)}
libstdcxx=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')
if [ -n "$libstdcxx" ]; then
  flags="-Wl,--push-state,--no-as-needed $libstdcxx -Wl,--pop-state"
  probe=$(mktemp -d)
  printf '#include <iostream>\nint main() { std::cout << ""; }\n' > "$probe/p.cpp"
  if "$cxx" "$probe/p.cpp" -o "$probe/p" 2>/dev/null && ! readelf -d "$probe/p" | grep -q 'libstdc++'; then
    echo "[gpu_build] $cxx links libstdc++ statically; linking $libstdcxx instead"
    # GCC >= 13 has -nostdlib++ to drop the static archive; older ones take the .so first anyway.
    if "$cxx" -nostdlib++ "$probe/p.cpp" -o "$probe/p" "$libstdcxx" 2>/dev/null; then flags="-nostdlib++ $flags"; fi
    link_args+=(-DCMAKE_CXX_STANDARD_LIBRARIES=-lm)
  fi
  rm -rf "$probe"
  link_args+=("-DCMAKE_EXE_LINKER_FLAGS=$flags" "-DCMAKE_SHARED_LINKER_FLAGS=$flags" "-DCMAKE_MODULE_LINKER_FLAGS=$flags")
fi
# pip's LibTorch ships fmt headers of its own (another major version than the fmt that spdlog was
# built against), and its include dir comes before /usr/include: spdlog would then compile against
# them. A -I dir holding only a link to the system fmt is searched first.
cxx_flags=()
prefix_path=${ATTNMT_PREFIX_PATH:-}
for p in ${prefix_path//:/ } /usr; do
  if [ -f "$p/include/fmt/format.h" ]; then
    mkdir -p "$build_dir/fmt-first" && ln -sfn "$(cd "$p/include/fmt" && pwd)" "$build_dir/fmt-first/fmt"
    cxx_flags=("-DCMAKE_CXX_FLAGS=-I$(cd "$build_dir/fmt-first" && pwd)")
    break
  fi
done
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DTorch_DIR="$torch_prefix/Torch" -DCMAKE_PREFIX_PATH="$prefixes" -DATTNMT_BUILD_TESTS="${ATTNMT_BUILD_TESTS:-ON}" "${link_args[@]}" "${cxx_flags[@]}" ${CMAKE_ARGS:-}
cmake --build "$build_dir" -j"${JOBS:-$(nproc)}" "$@"
