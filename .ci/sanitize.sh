#!/usr/bin/env bash
# Sanitizer runs, for a developer before a release (README, "Development"):
#   asan: the extension built with AddressSanitizer + UndefinedBehaviorSanitizer, whole test suite
#   tsan: the extension built with ThreadSanitizer, the tests that run threads
# Usage: .ci/sanitize.sh [asan|tsan|all]   (default: all). Needs gcc with libasan/libubsan/libtsan.
# Everything lives under .sanitize/ in the clone (ignored by git): a venv, one copy of the source
# per build; the normal build is untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WHAT=${1:-all}
WORK="$ROOT/.sanitize"
mkdir -p "$WORK/run"   # tests run from here, so only the sanitized copy is importable

if [[ ! -x $WORK/venv/bin/python ]]; then
    python3 -m venv --system-site-packages "$WORK/venv"
fi
PY="$WORK/venv/bin/python"
"$PY" -m pip install --quiet "numpy>=2.0" "pytest>=7" "hypothesis>=6" setuptools

build() {  # build <name> <flags>: copy the source to .sanitize/<name> and build it in place
    local dest="$WORK/$1" flags="$2"
    rm -rf "$dest"
    mkdir -p "$dest"
    tar --exclude=./.venv --exclude=./.sanitize --exclude=./build --exclude='*.so' \
        --exclude=./.hypothesis --exclude=./.git -cf - . | tar -xf - -C "$dest"
    (cd "$dest" && CC=gcc CXX=g++ CFLAGS="$flags" CXXFLAGS="$flags" LDFLAGS="$flags" \
        "$PY" setup.py -q build_ext --inplace >/dev/null)
}

run_tests() {  # run_tests <name> <LD_PRELOAD> <VAR=options> <pytest args...>
    local name="$1" preload="$2" opts="$3"
    shift 3
    (cd "$WORK/run" && env PYTHONPATH="$WORK/$name" LD_PRELOAD="$preload" "$opts" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" PYTHONMALLOC=malloc \
        "${SETARCH[@]}" "$PY" -m pytest -q --capture=sys -p no:cacheprovider --rootdir "$ROOT" \
        -c "$ROOT/pyproject.toml" "$@")
}

SETARCH=()
if [[ $WHAT == asan || $WHAT == all ]]; then
    start=$SECONDS
    [[ -n ${SKIP_BUILD:-} ]] || build asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
    built=$SECONDS
    # CPython's own allocations look like leaks to LeakSanitizer: leaks are tests/test_leaks.py's job.
    # malloc returns NULL when it fails, as without ASan (tests/test_gemm_errors.py limits memory).
    run_tests asan "$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libstdc++.so)" \
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1" "$ROOT/tests"
    echo "asan+ubsan: build $((built - start)) s, tests $((SECONDS - built)) s"
fi

if [[ $WHAT == tsan || $WHAT == all ]]; then
    start=$SECONDS
    [[ -n ${SKIP_BUILD:-} ]] || build tsan "-fsanitize=thread -g -O1"
    built=$SECONDS
    # some kernels' address-space randomisation leaves ThreadSanitizer no room for its shadow
    if setarch "$(uname -m)" -R true 2>/dev/null; then SETARCH=(setarch "$(uname -m)" -R); fi
    run_tests tsan "$(gcc -print-file-name=libtsan.so):$(gcc -print-file-name=libstdc++.so)" \
        TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:die_after_fork=0" \
        "$ROOT/tests/test_threads.py" "$ROOT/tests/test_parse.py::test_fromstring_beside_python_threads" \
        "$ROOT/tests/test_linalg.py::test_concurrent_python_threads" \
        "$ROOT/tests/test_linalg.py::test_results_do_not_depend_on_thread_count"
    echo "tsan: build $((built - start)) s, tests $((SECONDS - built)) s"
fi
