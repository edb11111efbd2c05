#!/bin/sh
# gen.sh regenerates the corpus: it copies each small failing project under
# src/ to /tmp/harnessd-corpus/NAME (a fixed path, so paths in the outputs
# stay the same from run to run), runs the real tool on it and writes
# stdout and stderr together to NAME.log here. Timings in the outputs
# change from run to run; the NAME.must files avoid them.
#
# Needs: go, python3 with pytest (Debian: python3-pytest), node >= 20,
# gcc and make, cargo (Debian: cargo), a JDK (javac, java).
#
#	core/trim/testdata/corpus/gen.sh          # all
#	core/trim/testdata/corpus/gen.sh pytest   # one
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=/tmp/harnessd-corpus
py=/usr/bin/python3
[ -x "$py" ] || py=python3
cargo=/usr/bin/cargo
[ -x "$cargo" ] || cargo=cargo

prep() {
	rm -rf "$work/$1"
	mkdir -p "$work"
	cp -r "$here/src/$1" "$work/$1"
	cd "$work/$1"
}

run() { # name, command...
	name=$1
	shift
	echo "== $name: $*" >&2
	"$@" >"$here/$name.log" 2>&1
	echo "   exit $?, $(wc -l <"$here/$name.log") lines" >&2
}

want() { [ $# -eq 0 ] || [ "$only" = "" ] || [ "$only" = "$1" ]; }
only=${1:-}

if want gotest; then prep gotest; GOFLAGS=-count=1 run gotest go test -v ./...; fi
if want unittest; then prep unittest; run unittest "$py" -m unittest -v; fi
if want pytest; then prep pytest; run pytest "$py" -m pytest -v -p no:cacheprovider test_shapes.py; fi
if want node-tap; then prep node; run node-tap node --test --test-reporter=tap; fi
if want node-spec; then prep node; run node-spec node --test --test-reporter=spec; fi
if want make; then prep make; run make make -k; fi
if want cargo-test; then prep cargo-test; CARGO_TERM_COLOR=never RUST_BACKTRACE=1 run cargo-test "$cargo" test --offline; fi
if want cargo-build; then prep cargo-build; CARGO_TERM_COLOR=never RUST_BACKTRACE=1 run cargo-build "$cargo" build --offline; fi
if want servicelog; then prep servicelog; run servicelog sh ./service.sh; fi
if want java; then prep java; run java sh -c 'javac Main.java && java Main'; fi
