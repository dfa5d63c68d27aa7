# shellcheck shell=bash disable=SC2154,SC2034  # sourced: gen and common come from the test, fail goes back to it
# Sourced by the generator bad-knob tests: expect <substring> <generator params...> runs "$gen" $common with the
# params and requires a non-zero exit, the substring in the output and no Halide internal error; fail=1 if not.
fail=0
expect() {
    local want="$1"; shift
    local msg rc
    # shellcheck disable=SC2086  # $common: the generator's arguments, one word each
    msg=$("$gen" $common "$@" 2>&1); rc=$?
    if [ "$rc" -eq 0 ] || ! grep -qF -- "$want" <<<"$msg" || grep -q "Internal Error" <<<"$msg"; then
        echo "FAIL: $* -> rc=$rc, output: $msg"; fail=1
    else
        echo "ok: $* -> $(grep -F -- "$want" <<<"$msg" | head -1)"
    fi
}
