#!/usr/bin/env bash
# Runs every Go fuzz target of the main module for FUZZTIME each (default
# 10s). `go test -fuzz` takes one package and one target at a time, so the
# targets are found in the _test.go files: a new one is run without being
# listed anywhere. One worker each (-parallel=1), and FUZZJOBS targets at
# once (default: one per core), so each target has a core of its own for
# its whole FUZZTIME and the tier takes FUZZTIME x targets / cores.
#
# FUZZMINIMIZETIME (default Go's own, 60s) bounds how long the fuzzer
# shrinks an input that widened coverage or failed before it goes on: in
# a 10-second run, Go's default would let one slow target spend most of
# its time shrinking its first new input (FuzzDecide made 270 runs in
# one such 10 s, where with 1 s of shrinking it made 12,000).
#
# A failing input is written to the package's testdata/fuzz/<Target>/;
# commit it with the fix, and `go test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
minimize=()
if [ -n "${FUZZMINIMIZETIME:-}" ]; then
	minimize=(-fuzzminimizetime="$FUZZMINIMIZETIME")
fi

targets=()
while IFS= read -r file; do
	dir=$(dirname "$file")
	while IFS= read -r name; do
		targets+=("./$dir:$name")
	done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file")
done < <(grep -rl --include='*_test.go' '^func Fuzz' api cmd internal | sort)

if [ ${#targets[@]} -eq 0 ]; then
	echo "no fuzz targets found" >&2
	exit 1
fi
# Go's fuzzing coordinator can report the end of -fuzztime itself as a
# failure, "context deadline exceeded", when a worker is still busy as the
# time runs out (go.dev/issue/75804, fixed after Go 1.26). A failing input
# is always written to testdata/fuzz/<Target>/; a run that ends with exactly
# that message and wrote none found nothing.
jobs=${FUZZJOBS:-$(nproc)}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# fuzz runs one target, its output in its own log.
fuzz() {
	local pkg=$1 name=$2 log=$3
	local corpus="$pkg/testdata/fuzz/$name"
	local before after rc=0
	before=$(ls "$corpus" 2>/dev/null || true)
	{
		echo "== $name ($pkg) for $fuzztime"
		go test -run '^$' -fuzz "^${name}\$" -fuzztime="$fuzztime" "${minimize[@]}" -parallel=1 "$pkg" 2>&1 || rc=$?
		if [ "$rc" -ne 0 ]; then
			after=$(ls "$corpus" 2>/dev/null || true)
			if [ "$before" = "$after" ] && grep -qx '    context deadline exceeded' "$log" &&
				[ "$(grep -c '^--- FAIL' "$log")" -eq 1 ]; then
				echo "== $name: stopped by the coordinator's own deadline (go.dev/issue/75804); no failing input was found"
				rc=0
			fi
		fi
	} > "$log" 2>&1
	return "$rc"
}

# The test binaries are built first, one package at a time (a run of one
# input), so that targets running side by side do not compile the same
# instrumented packages twice.
for t in "${targets[@]}"; do
	pkg=${t%%:*} name=${t##*:}
	go test -run '^$' -fuzz "^${name}\$" -fuzztime=1x -parallel=1 "$pkg" > "$logs/build" 2>&1 || {
		cat "$logs/build"
		exit 1
	}
done

# Target i starts once target i-jobs has ended; their logs are printed in
# order as they end.
pids=() failed=0
finish() {
	wait "${pids[$1]}" || failed=1
	cat "$logs/$1"
}
for i in "${!targets[@]}"; do
	if [ "$i" -ge "$jobs" ]; then
		finish $((i - jobs))
	fi
	t=${targets[$i]}
	fuzz "${t%%:*}" "${t##*:}" "$logs/$i" &
	pids+=($!)
done
for ((i = ${#pids[@]} - jobs; i < ${#pids[@]}; i++)); do
	if [ "$i" -ge 0 ]; then
		finish "$i"
	fi
done
exit "$failed"
