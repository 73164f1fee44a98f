#!/usr/bin/env bash
# Fuzzes the five places where outside bytes enter attnmt, with libFuzzer + AddressSanitizer +
# UndefinedBehaviorSanitizer (clang; Debian: clang, libclang-rt-14-dev), each for a bounded time:
#   fuzz_config           the YAML config loader (and --set overrides, and the YAML round trip)
#   fuzz_corpus           the corpus reader (plain/gzip, CRLF, UTF-8, NUL, line length, pair check)
#   fuzz_translate_input  translate's input reading + SentencePiece encode/decode
#   fuzz_pyformat         torch.save checkpoints (zip, legacy), pickles, safetensors (src/pyformat/)
#   fuzz_serve_request    `attnmt serve`'s request bodies and Authorization header (src/serve/request.h)
# Seeds: the configs, data and test data of the repository. Prints executions and crashes per
# target; crash inputs land in build-fuzz/crashes/<target>/. Exit 1 if any target crashed.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET ...]     (default 60 s, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
scripts/install_deps.sh
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNMT_BUILD_FUZZERS=ON -DATTNMT_TCMALLOC=OFF \
  -DATTNMT_BUILD_TESTS=OFF "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=address,undefined" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" >/dev/null
targets=(fuzz_config fuzz_corpus fuzz_translate_input fuzz_pyformat fuzz_serve_request)
if (($# > 1)); then targets=("${@:2}"); fi
cmake --build build-fuzz -j"${JOBS:-$(nproc)}" --target "${targets[@]}" attnmt_spm >/dev/null

seeds=build-fuzz/seeds
rm -rf "$seeds"; mkdir -p "$seeds"/{config,corpus,input,pyformat,request}
for f in configs/*/*.yaml; do cp "$f" "$seeds/config/$(basename "$(dirname "$f")")_$(basename "$f")"; done  # names repeat across folders
cp tests/data/pyformat/*.pt tests/data/pyformat/*.pkl tests/data/pyformat/*.safetensors "$seeds/pyformat/"
i=0
for f in data/multi30k/val.* tests/data/tiny.* tests/data/sacrebleu/*; do
  [ -f "$f" ] || continue
  head -c 4000 "$f" > "$seeds/corpus/$i"; head -c 2000 "$f" > "$seeds/input/$i"; i=$((i + 1))
done
printf 'Ein Mann\r\nzwei\n' > "$seeds/corpus/crlf"; gzip -c tests/data/tiny.de > "$seeds/corpus/gz"
# request bodies: both API shapes with every field, and a few of the mistakes the tests send
printf '%s' '{"model": "tiny", "text": ["Ein Mann", "zwei"], "beam_size": 4, "n_best": 2, "attention": true}' > "$seeds/request/v1"
printf '%s' '[{"src": "Ein Mann", "id": 100}, {"src": "zwei", "id": 0}, {"src": "drei"}]' > "$seeds/request/onmt"
printf '%s' '{"text": ["a"], "beam_size": 1e400, "model": 18446744073709551615}' > "$seeds/request/numbers"
printf '{"text": ["\xed\xa0\x80\xff"]}' > "$seeds/request/utf8"
printf '%s' 'Bearer k3y' > "$seeds/request/key"

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
status=0
printf '\n| target | seconds | executions | exec/s | crashes |\n|---|---|---|---|---|\n' > build-fuzz/summary.md
for t in "${targets[@]}"; do
  case $t in fuzz_config) s=config ;; fuzz_corpus) s=corpus ;; fuzz_pyformat) s=pyformat ;; fuzz_serve_request) s=request ;;
    *) s=input ;; esac
  mkdir -p "build-fuzz/crashes/$t" "build-fuzz/corpus/$t"
  log=build-fuzz/$t.log
  echo "[fuzz] $t: ${seconds}s"
  set +e
  build-fuzz/$t -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$t/" "build-fuzz/corpus/$t" "$seeds/$s" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  crashes=$(find "build-fuzz/crashes/$t" -type f | wc -l)
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then status=1; grep -m5 -E "ERROR|SUMMARY|==[0-9]+==" "$log" || true; fi
  printf '| %s | %s | %s | %s | %s |\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" "$crashes" >> build-fuzz/summary.md
done
cat build-fuzz/summary.md
exit $status
