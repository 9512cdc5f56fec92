#!/bin/sh
# deps.sh - installs the Debian packages collagec needs to build and test,
# when they are missing. Without root it prints the apt-get line and fails.
# Arguments name more packages (make test-all: valgrind and clang).
set -e
PKGS="gcc make libc6-dev protobuf-c-compiler libprotobuf-c-dev libonnx-dev libcjson-dev
libssl-dev libsqlite3-dev libonnx-testdata python3-onnx python3-numpy libopenblas-dev
liblapacke-dev pocl-opencl-icd ocl-icd-opencl-dev graphviz libdnnl-dev cmake pkgconf
libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev $*"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
# optional: chromium, for tests/explorer.sh's browser checks (skipped without it)
optional=""
dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed" ||
	optional=chromium
[ -z "$missing" ] && [ -z "$optional" ] && exit 0
if [ -z "$missing" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "collagec: installing (optional): $optional" >&2
		export DEBIAN_FRONTEND=noninteractive
		{ apt-get update -qq && apt-get install -y -qq $optional; } >/dev/null 2>&1 ||
			echo "collagec: could not install $optional; its tests will be skipped" >&2
	fi
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "collagec: missing Debian packages:$missing" >&2
	echo "collagec: run as root:  apt-get install -y$missing" >&2
	exit 1
fi
echo "collagec: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq $missing >/dev/null
apt-get install -y -qq $optional >/dev/null 2>&1 ||
	echo "collagec: could not install $optional; its tests will be skipped" >&2
