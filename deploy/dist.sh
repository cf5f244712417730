#!/usr/bin/env bash
# Builds a portable tarball of the flexwatt binary for a GPU node: bin/flexwatt (RPATH
# $ORIGIN/../lib through a wrapper), lib/ with every shared library it needs except the C
# library's own (libc, libm, libpthread, libdl, librt, ld-linux: the node's), deploy/ files,
# docs and scenarios. NVML is never bundled: the node's driver provides libnvidia-ml.so.1.
# Usage: deploy/dist.sh BUILD_DIR OUT_DIR   (prints the tarball path)
set -euo pipefail
build=$1
out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^project(flexwatt VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
name=flexwatt-${version:-dev}-$(uname -m)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin" "$root/lib" "$root/share/flexwatt"
cp "$build/flexwatt" "$root/bin/flexwatt.real"
ldd "$build/flexwatt" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$lib" "$root/lib/" ;;
  esac
done
cat > "$root/bin/flexwatt" <<'WRAP'
#!/bin/sh
# Runs the bundled binary with the bundled libraries (the node's libc and NVML).
here=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$here/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/flexwatt.real" "$@"
WRAP
chmod +x "$root/bin/flexwatt"
cp -r "$src/deploy" "$src/scenarios" "$root/share/flexwatt/"
cp "$src/docs/agent.md" "$src/docs/agent-api.md" "$src/README.md" "$root/share/flexwatt/"
mkdir -p "$out"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
