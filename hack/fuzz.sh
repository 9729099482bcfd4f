#!/usr/bin/env bash
# Runs every Go fuzz target of the main module for FUZZTIME each (default
# 10s), one after the other. `go test -fuzz` takes one package and one
# target at a time, so the targets are found in the _test.go files: a new
# one is run without being listed anywhere. One worker each (-parallel=1):
# the fuzzer otherwise takes every core.
#
# A failing input is written to the package's testdata/fuzz/<Target>/;
# commit it with the fix, and `go test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}

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
for t in "${targets[@]}"; do
	pkg=${t%%:*} name=${t##*:}
	echo "== $name ($pkg) for $fuzztime"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime="$fuzztime" -parallel=1 "$pkg"
done
