#!/usr/bin/env bash
# The project's static checks, as CI runs them (.ci/run, before the tests); exit status 1 when any fails.
#   clang-format  .clang-format over the C++ files below: tune/ and the files already formatted that no other
#                 branch was changing when the check came; a file joins the list once `clang-format -i FILE` has
#                 been applied to it.
#   ShellCheck    every shell script of the repository (a finding is fixed, or disabled on its line with a reason)
#   ruff          the Python (ruff.toml: pyflakes and pycodestyle at 120 columns)
#   usage: tools/lint.sh   (ruff from .venv: tools/install-deps.sh)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
FORMATTED=(
    tune/*.cpp tune/*.h
    runtime/cpu_ceilings.cpp
    runtime/dtype.h
    runtime/errors.cpp
    runtime/errors.h
    runtime/process.cpp
    runtime/stem.h
    runtime/tensor.cpp
    runtime/tensor.h
    runtime/timing.h
    runtime/workload.h
    schedules/block_schedule.h
    schedules/stem_schedule.h
    tests/common/stem_cases.h
    tests/kernels/test_conv2d_cpu.cpp
    tests/kernels/test_conv2d_opencl.cpp
    tests/unit/test_search.cpp
)
rc=0
echo "[lint] clang-format: ${#FORMATTED[@]} files"
clang-format --dry-run -Werror "${FORMATTED[@]}" || rc=1
mapfile -t scripts < <(git ls-files '*.sh' run .ci/run)
echo "[lint] shellcheck: ${#scripts[@]} scripts"
shellcheck -x -P SCRIPTDIR "${scripts[@]}" || rc=1  # -x: follow what a script sources
echo "[lint] ruff"
.venv/bin/ruff check --quiet . || rc=1
[ "$rc" -eq 0 ] && echo "[lint] ok"
exit "$rc"
