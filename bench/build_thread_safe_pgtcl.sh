#!/bin/sh
# Builds Debian's Pgtcl (the libpgtcl source package) with its two string-conversion buffers
# thread-local, so that HammerDB's virtual users (one Tcl thread each, one Pgtcl per thread)
# can run side by side. Debian's libpgtcl keeps those buffers in plain statics shared by every
# thread: with two or more virtual users HammerDB's calls go out with corrupted timestamps
# ("date/time field value out of range: \"2026126120627\"") and tclsh aborts ("alloc: invalid
# block"). Needs a deb-src entry, tcl8.6-dev and libpq-dev.
# Usage: bench/build_thread_safe_pgtcl.sh OUT_DIR   -> OUT_DIR/libpgtcl.so
set -eu
out=$(realpath -m "$1")
work=$(mktemp -d)
mkdir -p "$out"
cd "$work"
# The mirror may hold one release's tarball and another's .dsc: take any release's tarball.
for version in $(apt-cache showsrc libpgtcl | sed -n 's/^Version: //p'); do
    apt-get source --download-only -q "libpgtcl=$version" >/dev/null 2>&1 || true
done
tarball=$(ls pgtcl_*.orig.tar.gz | sort -V | tail -1)
tar xzf "$tarball"
cd pgtcl-*/
version=$(basename "$PWD" | sed 's/^pgtcl-//')
sed -i 's/static Tcl_DString tmpds;/static __thread Tcl_DString tmpds;/; s/static int allocated = 0;/static __thread int allocated = 0;/' generic/pgtclCmds.c
test "$(grep -c '__thread' generic/pgtclCmds.c)" = 4
gcc -O2 -shared -fPIC -DUSE_TCL_STUBS -DPACKAGE_VERSION="\"$version\"" -I/usr/include/tcl8.6 \
    -I"$(pg_config --includedir)" generic/pgtcl.c generic/pgtclCmds.c generic/pgtclId.c \
    generic/tokenize.c -ltclstub8.6 -lpq -o "$out/libpgtcl.so"
rm -rf "$work"
echo "$out/libpgtcl.so (Pgtcl $version, thread-safe string buffers)"
