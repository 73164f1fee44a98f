#!/usr/bin/env bash
# The public headers (include/attnmt/) and the code (src/) share namespace attnmt, so a public type
# named as one of src/'s would be a second definition of one type: the linker merges their inline
# functions (a std::vector<T>'s among them) without a word, and the program corrupts its heap.
# Fails naming each public type, alias or enum that src/ also declares. (error.h's types are the
# code's own: src/util/error.h includes it.)
set -euo pipefail
cd "$(dirname "$0")/.."
names=$(sed -nE 's/^(struct|class|enum class|enum) (ATTNMT_API )?([A-Za-z_][A-Za-z0-9_]*).*/\3/p; s/^using ([A-Za-z_][A-Za-z0-9_]*) =.*/\1/p' include/attnmt/*.h | sort -u)
[ -n "$names" ] || { echo "check_api_names: no public type found in include/attnmt/"; exit 1; }
status=0
for name in $names; do
  if found=$(grep -rnE "^\s*(struct|class|enum class|enum) ${name}([^A-Za-z0-9_:;][^;]*)?$|^\s*using ${name} =" src --include=*.h --include=*.cpp); then
    echo "check_api_names: the public type '$name' is also declared in src/ (rename one): $found"
    status=1
  fi
done
((status == 0)) && echo "check_api_names: ok ($(wc -w <<< "$names") public types)"
exit $status
