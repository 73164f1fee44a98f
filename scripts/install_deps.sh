#!/usr/bin/env bash
# Installs attnmt's build and run-time dependencies from Debian bookworm (skips what is there).
#   scripts/install_deps.sh [--test]   (--test: also what the test suite uses, headless Chromium
#                                       for the report test, NumPy for the Python module's,
#                                       dpkg-dev for the .deb's (dpkg-shlibdeps, as cpack uses it),
#                                       procps (pgrep, ps) for the resident engine's)
set -euo pipefail
packages=(cmake g++ make pkg-config libtorch-dev libsentencepiece-dev libyaml-cpp-dev libspdlog-dev
          catch2 libcli11-dev nlohmann-json3-dev zlib1g-dev libopenblas0-openmp libgloo-dev libdnnl-dev
          libcairo2-dev fonts-dejavu-core libgoogle-perftools-dev libcpp-httplib-dev libutfcpp-dev
          python3-dev pybind11-dev python3-venv)
[ "${1:-}" = "--test" ] && packages+=(chromium python3-numpy dpkg-dev procps)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[install] installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# LibTorch's BLAS must be OpenBLAS (13x faster matmul than the reference BLAS).
if command -v update-alternatives >/dev/null; then
  blas=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | awk '/^Value:/{print $2}')
  case "$blas" in *openblas*) ;; *) echo "[install] warning: libblas.so.3 is '$blas', not OpenBLAS" ;; esac
fi
