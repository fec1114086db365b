#!/usr/bin/env bash
# Fetch llama.cpp (as vendored in the llama-cpp-python 0.3.36 sdist, ggml-org/llama.cpp@0c1e57098)
# into a cache outside the repo and build the CPU-only libllama + llama-quantize.
set -euo pipefail
VERSION=0.3.36
CACHE=${LLAMA_CPP_CACHE:-/tmp/lcp}
SRC=${LLAMA_CPP_SRC:-$CACHE/llama_cpp_python-$VERSION/vendor/llama.cpp}
BUILD=${LLAMA_CPP_BUILD:-$CACHE/build}
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  mkdir -p "$CACHE"
  (cd "$CACHE" && pip download --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d . \
     && tar xzf "llama_cpp_python-$VERSION.tar.gz")
fi
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF \
  -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_OPENMP=OFF
cmake --build "$BUILD" -j"${JOBS:-2}" --target llama llama-quantize
HERE=$(cd "$(dirname "$0")" && pwd)
g++ -O1 -std=c++17 -I"$SRC/include" -I"$SRC/ggml/include" -I"$SRC/src" "$HERE/lcpp_alloc.cpp" \
  -L"$BUILD/bin" -Wl,-rpath,"$BUILD/bin" -lllama -lggml -lggml-base -o "$BUILD/lcpp_alloc"
echo "built $BUILD/lcpp_alloc"
