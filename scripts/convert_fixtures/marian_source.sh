#!/bin/bash
# Marian NMT (marian-nmt/marian-dev) built CPU-only from its public source on Debian bookworm:
# the `marian` trainer and `marian-decoder`, in DIR/build. Sourced by marian_fixtures.sh, or run:
#
#   MIRRORS=/work/.mirror scripts/convert_fixtures/marian_source.sh /work/marian
#   marian_source MIRRORS DIR      (as a function; does nothing if DIR/build/marian-decoder is there)
#
# Needs: apt-get install cmake g++ git libopenblas-dev (or libopenblas-openmp-dev) libsqlite3-dev
# zlib1g-dev; bare git mirrors of marian-nmt/marian-dev ($MIRRORS/marian-nmt+marian-dev/repo, HEAD
# c9f287d) and of marian-nmt/intgemm ($MIRRORS/marian-nmt+intgemm/repo: HEAD e4b82c1, since the
# submodule's pinned 0eda93a is not in the mirror). No network.
# Source: DIR/src = `git archive HEAD` of marian-dev (without src/3rd_party/SQLiteCpp/sqlite3/sqlite3.c,
# whose blob the mirror lacks) + intgemm in src/3rd_party/intgemm; the other submodules (fbgemm, nccl,
# ruy, sentencepiece, ...) are left out, CPU build without them. marian_build.patch:
#   1. SQLiteCpp compiles without the bundled amalgamation and marian links Debian's libsqlite3;
#   2. src/common/git_revision.h is written here from the mirror, no git custom command (no .git);
#   3. GCC 12's false -W(maybe-)uninitialized in avx512fintrin.h are warnings, not -Werror errors
#      (Marian's ALL_WARNINGS and intgemm's compile options).
# Build: Release, -march=native (BUILD_ARCH default), OpenBLAS, nice -n 15, make -j2.
# Took 35 min on 2 cores (AMD EPYC, AVX-512) with other work running beside it.
marian_source() {
  local mirrors=$1 dir=$2 here start
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  [ -x "$dir/build/marian-decoder" ] && [ -x "$dir/build/marian" ] && return 0
  if [ ! -f "$dir/src/CMakeLists.txt" ]; then
    mkdir -p "$dir/src/src/3rd_party/intgemm"
    # git archive warns "invalid object ... sqlite3.c" and exits 0 with everything else
    git --git-dir="$mirrors/marian-nmt+marian-dev/repo" archive HEAD -- . \
      ':(exclude)src/3rd_party/SQLiteCpp/sqlite3/sqlite3.c' 2>/dev/null | tar -x -C "$dir/src"
    git --git-dir="$mirrors/marian-nmt+intgemm/repo" archive HEAD | tar -x -C "$dir/src/src/3rd_party/intgemm"
    git --git-dir="$mirrors/marian-nmt+marian-dev/repo" rev-parse HEAD > "$dir/src/COMMIT"
    git --git-dir="$mirrors/marian-nmt+intgemm/repo" rev-parse HEAD > "$dir/src/INTGEMM_COMMIT"
    git --git-dir="$mirrors/marian-nmt+marian-dev/repo" log -1 --pretty=format:'#define GIT_REVISION "%h %ai"' \
      > "$dir/src/src/common/git_revision.h"
    patch -d "$dir/src" -p1 < "$here/marian_build.patch"
  fi
  mkdir -p "$dir/build"
  (cd "$dir/build" &&
    cmake ../src -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CPU=on -DCOMPILE_CUDA=off -DUSE_SENTENCEPIECE=off \
      -DUSE_FBGEMM=off -DUSE_MPI=off -DCOMPILE_SERVER=off -DUSE_MKL=off -DUSE_STATIC_LIBS=off \
      -DCOMPILE_TESTS=off -DCOMPILE_EXAMPLES=off -DUSE_DOXYGEN=off > cmake.log 2>&1) ||
    { echo "cmake failed, see $dir/build/cmake.log" >&2; return 1; }
  start=$(date +%s)
  (cd "$dir/build" && nice -n 15 make -j2 marian_train marian_decoder > make.log 2>&1) ||
    { echo "make failed, see $dir/build/make.log" >&2; return 1; }
  echo "marian built in $(( $(date +%s) - start )) s: $dir/build/marian, $dir/build/marian-decoder"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  marian_source "${MIRRORS:-/work/.mirror}" "${1:-/work/marian}"
fi
