# Progress for the long steps of run.sh, tests/setup.sh and wasm-demo/build.sh (sourced
# by them). A first `./run.sh demo` builds for three targets, about 20 minutes on two
# cores, and printed nothing meanwhile, so that it looked hung (issue 47). On a terminal
# cargo draws its own progress bar; elsewhere (a CI log, a pipe) cargo is quiet and a
# line every 20 s says what is still running. Every message goes to stderr.

# How long since `$1` (a value of $SECONDS), in words.
elapsed_since() {
    local s=$((SECONDS - $1))
    if ((s < 60)); then echo "$s s"; else echo "$((s / 60)) min $((s % 60)) s"; fi
}

# Runs the command after `$1` (what it does, as in "still $1 (40 s)"), printing that
# line 5 s after it starts and then every 20 s until it ends; returns its status. The
# first line comes early because steps run back to back: the last line of one step
# can be 20 s before its end, and the next step's first line must follow within 30 s.
with_progress() {
    local doing=$1 start=$SECONDS ticker status=0
    shift
    (
        # The nap's output goes nowhere, so that a nap left running never holds a pipe
        # that the caller's reader waits on.
        trap 'kill "$nap" 2>/dev/null; exit 0' TERM
        nap_seconds=5
        while :; do
            sleep "$nap_seconds" >/dev/null 2>&1 &
            nap=$!
            wait "$nap"
            echo "  still $doing ($(elapsed_since "$start"))" >&2
            nap_seconds=20
        done
    ) &
    ticker=$!
    "$@" || status=$?
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    return "$status"
}

# `cargo "$@"` for a build: with cargo's progress bar on a terminal, else quiet with
# `with_progress`'s lines, saying "building $1".
cargo_build() {
    local what=$1
    shift
    if [[ -t 2 ]]; then
        cargo "$@"
    else
        with_progress "building $what" cargo -q "$@"
    fi
}
