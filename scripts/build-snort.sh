#!/usr/bin/env bash
# Builds libdaq and Snort 3 from the source archives in ../shared/src (see the README there) and installs
# them under the idsbench cache, once per machine:
#
#   ${IDSBENCH_CACHE:-~/.cache/idsbench}/snort/<snort-version>-<digest>/{bin/snort,lib/libdaq.so.3,...}
#
# <digest> covers both archives' sha256, the build flags and this recipe's version, so a change of any of
# them builds a new tree beside the old one. A stamp file (.built, written last) marks a finished tree: a
# second call returns at once. `current` (a symlink beside the trees) points at the last tree built or
# found. The snort binary is stripped and carries an rpath to its prefix's lib/, so libdaq is found
# without LD_LIBRARY_PATH; the DAQ modules (afpacket, pcap, ...) are linked into it statically.
#
#
# Beside the tree's own DAQ modules it builds idsbench's pcap module, <prefix>/lib/daq-idsbench/daq_pcap.so:
# libdaq's pcap module with scripts/patches/libdaq-3.0.25-pcap-interrupt.patch (its interrupt also calls
# pcap_breakloop, so Snort stops on a quiet wire: libpcap 1.10 on Linux loops on poll's timeouts in blocking
# mode and the module's flag alone is never seen; version 104, so it replaces the static pcap(v4) when Snort
# is given the directory in daq.module_dirs, as idsbench does for the "pcap" capture). One C file: seconds,
# built (again) whenever its stamp lacks the patch's digest, outside the tree's digest (no Snort rebuild).
#
# Usage: scripts/build-snort.sh [--print-prefix | --print-record]
#   --print-prefix   print the install prefix this machine's build has (or would have) and exit
#   --print-record   print what the digest covers (key=value: digest, configure, archives and their sha256)
#                    and exit; the stamp holds the same lines (a stamp written before it did can be
#                    completed from this output when the digests agree: idsbench probe does)
# Environment:
#   IDSBENCH_SNORT_SRC  directory holding the archives (default: <repo>/../shared/src)
#   IDSBENCH_CACHE      the idsbench cache (default: ~/.cache/idsbench)
#   SNORT_BUILD_JOBS    parallel compiler processes (default: nproc; each needs up to ~1.1 GB)
#   SNORT_BUILD_KEEP=1  on failure keep the build directory and the unfinished prefix for inspection
# Build dependencies: the Debian packages in scripts/install-system.sh (`make system`).
set -euo pipefail

SNORT_VERSION=3.12.2.0
DAQ_VERSION=3.0.25
RECIPE=1  # bump when a change below alters the installed tree

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src_dir=${IDSBENCH_SNORT_SRC:-$repo/../shared/src}
cache=${IDSBENCH_CACHE:-$HOME/.cache/idsbench}
jobs=${SNORT_BUILD_JOBS:-$(nproc)}
snort_tgz=$src_dir/snort3-$SNORT_VERSION.tar.gz
daq_tgz=$src_dir/libdaq-$DAQ_VERSION.tar.gz

# -O2 without debug info: the release optimisation level, a fraction of the compiler memory and a
# binary of tens of MB instead of 247 MB; docs are not needed.
OPT_FLAGS="-O2"
SNORT_CONFIGURE=(--disable-gdb --disable-docs)

log() { echo "build-snort: $*" >&2; }
die() { echo "build-snort: $*" >&2; exit 1; }

for f in "$snort_tgz" "$daq_tgz"; do
  [ -r "$f" ] || die "missing source archive $f; set IDSBENCH_SNORT_SRC to the directory holding \
snort3-$SNORT_VERSION.tar.gz and libdaq-$DAQ_VERSION.tar.gz (see ../shared/src/README.md)"
done

snort_sha256=$(sha256sum "$snort_tgz" | cut -d' ' -f1)
daq_sha256=$(sha256sum "$daq_tgz" | cut -d' ' -f1)
digest=$( { echo "$snort_sha256"; echo "$daq_sha256"
            echo "recipe=$RECIPE opt=$OPT_FLAGS snort=${SNORT_CONFIGURE[*]}"; } | sha256sum | cut -c1-12)
base=$cache/snort
prefix=$base/$SNORT_VERSION-$digest
stamp=$prefix/.built

record() {
  echo "digest=$digest"
  echo "recipe=$RECIPE"
  echo "configure=${SNORT_CONFIGURE[*]} CFLAGS=$OPT_FLAGS CXXFLAGS=$OPT_FLAGS"
  echo "source=$snort_tgz"
  echo "source_sha256=$snort_sha256"
  echo "daq_source=$daq_tgz"
  echo "daq_sha256=$daq_sha256"
}

case "${1:-}" in
  --print-prefix) echo "$prefix"; exit 0 ;;
  --print-record) record; exit 0 ;;
esac
[ $# -eq 0 ] || die "unknown argument $1 (usage: build-snort.sh [--print-prefix | --print-record])"

verify() {
  local snort=$prefix/bin/snort out
  out=$("$snort" -V 2>&1) || die "$snort -V failed: $out"
  grep -q "Version $SNORT_VERSION" <<<"$out" || die "$snort -V does not report $SNORT_VERSION: $out"
  grep -q "Using DAQ version $DAQ_VERSION" <<<"$out" || die "$snort -V does not report DAQ $DAQ_VERSION: $out"
  out=$("$snort" --daq-list 2>&1) || die "$snort --daq-list failed: $out"
  for m in afpacket pcap; do
    grep -q "^$m(v" <<<"$out" || die "$snort --daq-list lacks the $m module: $out"
  done
}

pcap_patch=$repo/scripts/patches/libdaq-$DAQ_VERSION-pcap-interrupt.patch
pcap_dir=$prefix/lib/daq-idsbench
pcap_module() {  # idsbench's pcap DAQ module (see the header); a no-op when its stamp has the patch's digest
  local sha tmp out
  sha=$(sha256sum "$pcap_patch" | cut -d' ' -f1)
  [ "$(cat "$pcap_dir/.built" 2>/dev/null)" = "patch_sha256=$sha" ] && return 0
  exec 8>"$base/.pcap-module.lock"
  flock 8
  if [ "$(cat "$pcap_dir/.built" 2>/dev/null)" != "patch_sha256=$sha" ]; then
    tmp=$(mktemp -d "$base/.pcap-module-XXXXXX")
    tar -xzf "$daq_tgz" -C "$tmp" "libdaq-$DAQ_VERSION/modules/pcap/daq_pcap.c"
    patch -s -d "$tmp/libdaq-$DAQ_VERSION" -p1 <"$pcap_patch" || { rm -rf "$tmp"; die "$pcap_patch does not apply"; }
    : >"$tmp/config.h"
    mkdir -p "$pcap_dir"
    cc -O2 -fPIC -shared -DBUILDING_SO -I"$tmp" -I"$prefix/include" \
      "$tmp/libdaq-$DAQ_VERSION/modules/pcap/daq_pcap.c" -o "$pcap_dir/daq_pcap.so" -lpcap \
      || { rm -rf "$tmp"; die "idsbench's pcap DAQ module failed to build (needs libpcap-dev: 'make system')"; }
    rm -rf "$tmp"
    out=$("$prefix/bin/snort" --daq-dir "$pcap_dir" --daq-list 2>&1) || die "snort --daq-list with $pcap_dir failed: $out"
    grep -q "^pcap(v104)" <<<"$out" || die "snort does not take $pcap_dir/daq_pcap.so as its pcap module: $out"
    echo "patch_sha256=$sha" >"$pcap_dir/.built"
    log "built idsbench's pcap DAQ module into $pcap_dir"
  fi
  flock -u 8
}

finish() {
  pcap_module
  ln -sfn "$(basename "$prefix")" "$base/current"
  echo "$prefix"
}

if [ -f "$stamp" ]; then
  verify
  finish
  exit 0
fi

mkdir -p "$base"
exec 9>"$base/.lock"
if ! flock -n 9; then
  log "another build holds $base/.lock: waiting for it"
  flock 9
fi
if [ -f "$stamp" ]; then  # another process built it while this one waited
  verify
  finish
  exit 0
fi

for tool in autoreconf libtoolize cmake make g++ pkg-config flex bison; do
  command -v "$tool" >/dev/null || die "$tool is missing: install the build dependencies with \
'make system' (scripts/install-system.sh)"
done

work=$(mktemp -d "$base/.build-XXXXXX")
cleanup() {
  local rc=$?
  if [ $rc -ne 0 ] && [ "${SNORT_BUILD_KEEP:-0}" = 1 ]; then
    log "kept $work and $prefix for inspection (SNORT_BUILD_KEEP=1)"
    return
  fi
  rm -rf "$work"
  if [ $rc -ne 0 ] && [ ! -f "$stamp" ]; then rm -rf "$prefix"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$prefix"

t0=$(date +%s)
log "building libdaq $DAQ_VERSION and Snort $SNORT_VERSION into $prefix with $jobs jobs (about 8-10 min on 2 cores)"
tar -xzf "$daq_tgz" -C "$work"
tar -xzf "$snort_tgz" -C "$work"

(
  cd "$work/libdaq-$DAQ_VERSION"
  ./bootstrap >"$work/daq-bootstrap.log" 2>&1 || { tail -30 "$work/daq-bootstrap.log"; exit 1; }
  ./configure --prefix="$prefix" >"$work/daq-configure.log" 2>&1 || { tail -30 "$work/daq-configure.log"; exit 1; }
  make -j"$jobs" >"$work/daq-make.log" 2>&1 || { tail -40 "$work/daq-make.log"; exit 1; }
  make install >"$work/daq-install.log" 2>&1 || { tail -30 "$work/daq-install.log"; exit 1; }
) || die "libdaq failed to build (log above)"
t1=$(date +%s)
log "libdaq built in $((t1 - t0)) s"

(
  cd "$work/snort3-$SNORT_VERSION"
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export CFLAGS=$OPT_FLAGS CXXFLAGS=$OPT_FLAGS
  # Snort's cmake sets CMAKE_SKIP_RPATH; the linker flag puts the rpath in by hand.
  export LDFLAGS="-Wl,-rpath,$prefix/lib"
  ./configure_cmake.sh --prefix="$prefix" --with-daq-includes="$prefix/include" \
    --with-daq-libraries="$prefix/lib" "${SNORT_CONFIGURE[@]}" >"$work/snort-configure.log" 2>&1 \
    || { tail -40 "$work/snort-configure.log"; exit 1; }
  grep -A1 "DAQ Modules" "$work/snort-configure.log" >&2 || true
  cd build
  make -j"$jobs" >"$work/snort-make.log" 2>&1 || { grep -m20 -B2 -A8 "error" "$work/snort-make.log"; exit 1; }
  make install >"$work/snort-install.log" 2>&1 || { tail -30 "$work/snort-install.log"; exit 1; }
) || die "Snort failed to build (log above)"
t2=$(date +%s)
log "Snort built in $((t2 - t1)) s"

strip --strip-unneeded "$prefix/bin/snort"
readelf -d "$prefix/bin/snort" | grep -Eq "(RPATH|RUNPATH).*\[$prefix/lib\]" \
  || die "the snort binary has no rpath to $prefix/lib"
verify

size=$(du -sb "$prefix" | cut -f1)
{
  echo "snort_version=$SNORT_VERSION"
  echo "daq_version=$DAQ_VERSION"
  record
  echo "jobs=$jobs"
  echo "daq_build_s=$((t1 - t0))"
  echo "snort_build_s=$((t2 - t1))"
  echo "installed_bytes=$size"
  echo "built_unix=$t2"
} >"$stamp.tmp"
mv "$stamp.tmp" "$stamp"
log "done in $((t2 - t0)) s (libdaq $((t1 - t0)) s, Snort $((t2 - t1)) s); installed $((size / 1048576)) MiB"
finish
