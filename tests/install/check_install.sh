#!/usr/bin/env bash
# What attnmt installs, checked as its users meet it (CTest install:example and install:deb):
#   check_install.sh example   `cmake --install` into a temporary prefix; the layout, the soname and
#                              the exported symbols; examples/ configured and built as a separate
#                              CMake project against it (CMAKE_PREFIX_PATH) without a LibTorch
#                              header, and with pkg-config; its translations equal the installed
#                              `attnmt translate`'s on a tiny model
#   check_install.sh deb       `cpack -G DEB`: dpkg-deb --info / --contents, the package unpacked
#                              with dpkg -x runs `attnmt --version` and translates with the system's
#                              libraries, and its Depends are what dpkg-shlibdeps computes
# Both install the build as it is (nothing is rebuilt). Environment (set by CTest):
# ATTNMT_BUILD_DIR, ATTNMT_SOURCE_DIR, ATTNMT_BINARY, ATTNMT_TEST_DATA_DIR. A missing tool is a
# skip (exit 77, "SKIPPED: ..."), a failure under CI=true.
set -euo pipefail
part=${1:?usage: check_install.sh example|deb}
build=${ATTNMT_BUILD_DIR:?} source=${ATTNMT_SOURCE_DIR:?} data=${ATTNMT_TEST_DATA_DIR:?}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=PASSIVE

fail() { echo "install:$part: FAILED: $*" >&2; exit 1; }
missing() {
  echo "SKIPPED: install:$part: $*"
  [ "${CI:-}" = true ] && fail "$* (CI=true: a test that cannot run fails)"
  exit 77
}
need() { command -v "$1" >/dev/null || missing "no $1 (Debian: $2)"; }
tmp=$(mktemp -d /tmp/attnmt_install_XXXXXX)
trap 'rm -rf "$tmp"' EXIT

version=$("$ATTNMT_BINARY" --version | awk '{print $2}')
[ -n "$version" ] || fail "attnmt --version printed no version"
major=${version%%.*}

# Where an installed engine ($1) takes the libraries LibTorch links but never calls (the build's
# torch-unused/unused.txt, cmake/torch_trim.cmake): every one of them from $2, the installed
# directory, and at least one (the loader lists the empty library once, under one of the names).
check_unused_links() {
  local list=$build/torch-unused/unused.txt
  [ -s "$list" ] || return 0
  local from
  from=$(LD_TRACE_LOADED_OBJECTS=1 /lib64/ld-linux-x86-64.so.2 "$1" |
         awk 'NR == FNR { unused[$1] = 1; next } ($1 in unused) { print $3 }' "$list" -)
  [ -n "$from" ] || fail "the installed engine loads none of LibTorch's uncalled links from the empty library"
  while read -r file; do
    [ "$(realpath "$(dirname "$file")")" = "$(realpath "$2")" ] || fail "the installed engine takes an uncalled library from $file, not from $2"
  done <<< "$from"
}

# A tiny model, trained by the build's program.
train_model() { ATTNMT=$ATTNMT_BINARY "$source/scripts/tiny_model.sh" "$tmp/model" 40 || fail "training the tiny model"; }

# Which libattnmt_spm.so a run of `$@` loaded (the dynamic loader's own account).
spm_module_loaded() { LD_DEBUG=files "$@" 2>&1 >/dev/null | sed -n 's/.*file=\(.*libattnmt_spm\.so\) .*/\1/p' | head -1; }

check_example() {
  need c++ g++
  need pkg-config pkg-config
  need readelf binutils
  local prefix=$tmp/prefix
  cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
  local libdir
  libdir=$(dirname "$(find "$prefix" -name "libattnmt.so.$version" | head -1)")
  [ -d "$libdir" ] || fail "no libattnmt.so.$version installed"
  for f in bin/attnmt bin/attnmt-engine include/attnmt/attnmt.h include/attnmt/translator.h include/attnmt/version.h \
           "${libdir#"$prefix"/}/libattnmt.so" "${libdir#"$prefix"/}/attnmt/libattnmt_spm.so" \
           "${libdir#"$prefix"/}/cmake/attnmt/attnmtConfig.cmake" "${libdir#"$prefix"/}/cmake/attnmt/attnmtConfigVersion.cmake" \
           "${libdir#"$prefix"/}/pkgconfig/attnmt.pc"; do
    [ -e "$prefix/$f" ] || fail "cmake --install put no $f"
  done
  # The soname carries the major version; the development link points at it.
  readelf -d "$libdir/libattnmt.so.$version" | grep -q "SONAME.*\[libattnmt.so.$major\]" || fail "soname is not libattnmt.so.$major"
  [ "$(readlink "$libdir/libattnmt.so")" = "libattnmt.so.$major" ] || fail "libattnmt.so does not link to libattnmt.so.$major"
  # The public headers include the standard library and each other only.
  if grep -hE '^#include' "$prefix"/include/attnmt/*.h | grep -vE '^#include <(attnmt/[a-z_]+\.h|[a-z_]+)>$'; then
    fail "a public header includes something besides the standard library and attnmt/"
  fi
  # The library exports its API and nothing of attnmt's internals, LibTorch, SentencePiece, spdlog
  # or the other libraries inside it (the standard library's template instances it also defines
  # are the same everywhere).
  local exported leaked
  exported=$(nm -D --defined-only -C "$libdir/libattnmt.so.$version" | awk '{$1=$2=""; print substr($0,3)}')
  grep -qE '^attnmt::Translator::translate\(' <<< "$exported" || fail "libattnmt.so does not export Translator::translate"
  leaked=$(grep -E '(attnmt|c10|at|torch|caffe2|sentencepiece|spdlog|fmt|YAML|nlohmann|dnnl|httplib|google)::' <<< "$exported" |
           grep -vE '^attnmt::(Translator::|version\(|model_format_version\(|score\()' || true)
  [ -z "$leaked" ] || fail "libattnmt.so exports more than the API: $(head -5 <<< "$leaked")"

  train_model
  # examples/, a separate CMake project, against the installed package only.
  cmake -S "$source/examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    > "$tmp/examples.log" 2>&1 || { cat "$tmp/examples.log"; fail "configuring examples/ against the installed package"; }
  cmake --build "$tmp/examples" >> "$tmp/examples.log" 2>&1 || { cat "$tmp/examples.log"; fail "building examples/"; }
  # Its compilation read no LibTorch, SentencePiece or spdlog header (the compiler's dependency file)
  # and was given no such include directory.
  local deps
  deps=$(find "$tmp/examples" -name 'translate.cpp.o.d')
  [ -n "$deps" ] || fail "no dependency file for examples/translate.cpp"
  if grep -E 'torch|c10/|ATen|sentencepiece|spdlog' $deps "$tmp/examples/CMakeFiles/translate.dir/flags.make"; then
    fail "building examples/ read a LibTorch, SentencePiece or spdlog header"
  fi
  # It translates as the installed program does (both on every core: the example's default).
  "$prefix/bin/attnmt" translate --model "$tmp/model" --input "$data/tiny.de" --threads 0 > "$tmp/cli.txt"
  "$tmp/examples/translate" "$tmp/model" < "$data/tiny.de" > "$tmp/example.txt"
  cmp "$tmp/cli.txt" "$tmp/example.txt" || fail "examples/translate's output differs from attnmt translate's"
  [ "$(wc -l < "$tmp/example.txt")" = "$(wc -l < "$data/tiny.de")" ] || fail "examples/translate wrote another number of lines"
  "$prefix/bin/attnmt" translate --model "$tmp/model" --input "$data/tiny.de" --threads 0 --beam-size 1 > "$tmp/cli1.txt"
  "$tmp/examples/translate" "$tmp/model" 1 < "$data/tiny.de" > "$tmp/example1.txt"
  cmp "$tmp/cli1.txt" "$tmp/example1.txt" || fail "examples/translate MODEL 1 differs from attnmt translate --beam-size 1"
  # Installed, the program and the library load the installed SentencePiece module.
  local loaded
  loaded=$(spm_module_loaded "$tmp/examples/translate" "$tmp/model" < "$data/tiny.de")
  [ "$loaded" = "$libdir/attnmt/libattnmt_spm.so" ] || fail "examples/translate loaded '$loaded', not the installed module"
  loaded=$(spm_module_loaded "$prefix/bin/attnmt" translate --model "$tmp/model" --input "$data/tiny.de")
  [[ "$loaded" == "$prefix"/* ]] || fail "the installed attnmt loaded '$loaded', not the installed module"
  check_unused_links "$prefix/bin/attnmt-engine" "$libdir/attnmt/torch-unused"
  # Errors: the program's message and exit status.
  local status=0 message
  message=$("$tmp/examples/translate" "$tmp/absent.pt" < /dev/null 2>&1) || status=$?
  [ "$status" = 2 ] || fail "examples/translate on a missing model exited $status"
  [ "$message" = "$tmp/examples/translate: error: model '$tmp/absent.pt' does not exist (give a model file or a save dir)" ] ||
    fail "examples/translate on a missing model said: $message"

  # The same program built with pkg-config instead of CMake.
  local flags
  flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs attnmt)
  [ "$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --modversion attnmt)" = "$version" ] || fail "pkg-config --modversion"
  # shellcheck disable=SC2086
  c++ -std=c++17 -O1 "$source/examples/translate.cpp" -o "$tmp/translate_pc" $flags -Wl,-rpath,"$libdir" ||
    fail "building examples/translate.cpp with pkg-config's flags ($flags)"
  "$tmp/translate_pc" "$tmp/model" < "$data/tiny.de" > "$tmp/pc.txt"
  cmp "$tmp/cli.txt" "$tmp/pc.txt" || fail "the pkg-config build's output differs"
  echo "install:example: ok (attnmt $version, prefix layout, soname libattnmt.so.$major, examples/ and pkg-config builds)"
}

check_deb() {
  need cpack cmake
  need dpkg-deb dpkg
  need dpkg-shlibdeps dpkg-dev
  [ -f "$build/CPackConfig.cmake" ] || fail "no CPackConfig.cmake in $build"
  (cd "$tmp" && cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/pkg" > "$tmp/cpack.log" 2>&1) ||
    { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
  local arch deb
  arch=$(dpkg --print-architecture)
  deb="$tmp/pkg/attnmt_${version}_${arch}.deb"
  [ -f "$deb" ] || { ls "$tmp/pkg"; fail "no attnmt_${version}_${arch}.deb"; }
  local info contents
  info=$(dpkg-deb --info "$deb")
  contents=$(dpkg-deb --contents "$deb" | awk '{print $NF}')
  grep -q "^ Package: attnmt$" <<< "$info" || fail "dpkg-deb --info: no 'Package: attnmt'"
  grep -q "^ Version: $version$" <<< "$info" || fail "dpkg-deb --info: no 'Version: $version'"
  for f in ./usr/bin/attnmt ./usr/bin/attnmt-engine "libattnmt.so.$major" attnmt/libattnmt_spm.so \
           ./usr/include/attnmt/translator.h ./usr/include/attnmt/version.h cmake/attnmt/attnmtConfig.cmake \
           pkgconfig/attnmt.pc ./usr/lib/python3/dist-packages/attnmt/__init__.py; do
    grep -qF -- "$f" <<< "$contents" || fail "the package holds no $f"
  done
  # Unpacked into a root of its own: the program runs with the system's libraries, and translates
  # with the package's SentencePiece module.
  dpkg -x "$deb" "$tmp/root"
  local out
  out=$("$tmp/root/usr/bin/attnmt" --version) || fail "the package's attnmt --version failed"
  [[ "$out" == "attnmt $version"* ]] || fail "the package's attnmt --version said: $out"
  out=$("$tmp/root/usr/bin/attnmt-engine" --version) || fail "the package's attnmt-engine --version failed"
  train_model
  "$tmp/root/usr/bin/attnmt" translate --model "$tmp/model" --input "$data/tiny.de" > "$tmp/deb.txt" ||
    fail "the package's attnmt translate failed"
  "$ATTNMT_BINARY" translate --model "$tmp/model" --input "$data/tiny.de" > "$tmp/build.txt"
  cmp "$tmp/deb.txt" "$tmp/build.txt" || fail "the package's attnmt translates otherwise than the build's"
  local loaded
  loaded=$(spm_module_loaded "$tmp/root/usr/bin/attnmt" translate --model "$tmp/model" --input "$data/tiny.de")
  [[ "$(realpath "$loaded")" == "$tmp/root/usr/lib/"* ]] || fail "the package's attnmt loaded '$loaded', not the package's module"
  check_unused_links "$tmp/root/usr/bin/attnmt-engine" "$(dirname "$(find "$tmp/root" -name "libattnmt.so.$major")")/attnmt/torch-unused"
  # Its Python module, with Debian's python3 (the one it was built for).
  if [ -x /usr/bin/python3 ]; then
    out=$(cd "$tmp" && PYTHONPATH="$tmp/root/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
      'import sys, attnmt; print(attnmt.__version__, attnmt.__file__); print(attnmt.Translator(sys.argv[1], threads=1).translate(sys.argv[2:])[0][0].text)' \
      "$tmp/model" "$(head -1 "$data/tiny.de")") || fail "the package's Python module: $out"
    [[ "$(head -1 <<< "$out")" == "$version $tmp/root/usr/lib/python3/dist-packages/attnmt/"* ]] ||
      fail "the package's Python module said: $out"
    [ "$(tail -1 <<< "$out")" = "$(head -1 "$tmp/build.txt")" ] || fail "the package's Python module translates otherwise: $out"
  fi
  # Its Depends: dpkg-shlibdeps' for its ELF files, and the CPython its module was built for.
  local elves declared computed
  mapfile -t elves < <(find "$tmp/root" -type f -exec sh -c 'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
  mkdir -p "$tmp/shlibs/debian"
  printf 'Source: attnmt\n\nPackage: attnmt\nArchitecture: any\n' > "$tmp/shlibs/debian/control"
  computed=$(cd "$tmp/shlibs" && dpkg-shlibdeps -O "${elves[@]}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
  [ -n "$computed" ] || fail "dpkg-shlibdeps computed nothing"
  declared=$(sed -n 's/^ Depends: //p' <<< "$info")
  local lib
  declared_libs=$(tr ',' '\n' <<< "$declared" | sed 's/^ *//' | grep -v '^python3 ' | sort)
  computed_libs=$(tr ',' '\n' <<< "$computed" | sed 's/^ *//' | sort)
  [ "$declared_libs" = "$computed_libs" ] ||
    fail "Depends differs from dpkg-shlibdeps': $(diff <(echo "$declared_libs") <(echo "$computed_libs") | head -10)"
  grep -q "python3 (>= " <<< "$declared" || fail "Depends names no python3 for the module"
  for lib in libtorch libsentencepiece; do
    grep -q "$lib" <<< "$declared" || fail "Depends names no $lib package"
  done
  echo "install:deb: ok ($(basename "$deb"), $(du -h "$deb" | cut -f1), $(wc -l <<< "$contents") entries; Depends: $declared)"
}

case "$part" in
  example) check_example ;;
  deb) check_deb ;;
  *) fail "unknown part '$part' (example | deb)" ;;
esac
