#!/usr/bin/env bash
# The project's static checks, as CI runs them (.ci/run, before the tests); exit status 1 when any fails.
#   clang-format  .clang-format over every C++ file of the repository (`clang-format -i FILE` fixes one)
#   ShellCheck    every shell script of the repository (a finding is fixed, or disabled on its line with a reason)
#   ruff          the Python (ruff.toml: pyflakes and pycodestyle at 120 columns)
#   usage: tools/lint.sh   (ruff from .venv: tools/install-deps.sh)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
mapfile -t FORMATTED < <(git ls-files '*.cpp' '*.h')
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
