#!/usr/bin/env bash
# Build surge's release binaries: static (CGO_ENABLED=0), reproducible paths
# (-trimpath), stripped (-s -w), with the version stamped into main.version.
#
#   bash scripts/release.sh VERSION        e.g. bash scripts/release.sh 0.1.0
#
# Writes, under dist/ at the repository root (from any working directory;
# SURGE_DIST=DIR writes to DIR instead, relative to the repository root):
#   surge-VERSION-linux-amd64  surge-VERSION-linux-arm64
#   surge-VERSION-darwin-amd64 surge-VERSION-darwin-arm64
#   SHA256SUMS                 (sha256sum format, names relative to dist/)
# then checks the sums it wrote and lists the files with their sizes.
# Binaries of an earlier run of the same VERSION are replaced, others stay;
# SHA256SUMS is rewritten with this VERSION's binaries only.
set -euo pipefail

usage() {
	echo "usage: $0 VERSION   (VERSION: letters, digits and . _ + -, e.g. 0.1.0 or 1.2.0-rc.1)" >&2
	exit 2
}

[ "$#" -eq 1 ] || usage
version=$1
[ -n "$version" ] || usage
if [[ ! "$version" =~ ^[A-Za-z0-9._+-]+$ ]]; then
	echo "release.sh: VERSION '$version' has characters other than [A-Za-z0-9._+-]" >&2
	exit 2
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -f go.mod ] || [ ! -d cmd/surge ]; then
	echo "release.sh: $(pwd) is not the surge repository root" >&2
	exit 1
fi

targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
dist=${SURGE_DIST:-dist}
mkdir -p "$dist"
names=()
for t in "${targets[@]}"; do
	os=${t%/*} arch=${t#*/}
	name="surge-$version-$os-$arch"
	echo "building $dist/$name" >&2
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags "-s -w -X main.version=$version" \
		-o "$dist/$name.tmp" ./cmd/surge
	mv -f "$dist/$name.tmp" "$dist/$name"
	names+=("$name")
done

goversion=$(go env GOVERSION) # here: go.mod may select the toolchain
cd "$dist"
sha256sum "${names[@]}" > SHA256SUMS
sha256sum -c SHA256SUMS
echo
echo "built surge $version with $goversion:"
for f in "${names[@]}" SHA256SUMS; do
	size=$(wc -c < "$f")
	awk -v f="$dist/$f" -v n="$size" 'BEGIN { printf "  %10d bytes %6.1f MiB  %s\n", n, n / 1048576, f }'
done
