#!/usr/bin/env bash
# Builds Suricata from a release source tree (default: ../shared/src/suricata-8.0.6.tar.xz, see the README
# there) and installs it under the idsbench cache, once per machine and option set:
#
#   ${IDSBENCH_CACHE:-~/.cache/idsbench}/suricata/<version>-<options>-<digest>/{bin/suricata,etc/suricata/...}
#
# <digest> is the build's cache key: the source archive's sha256, the configure flags, the compilers'
# identity (cc, rustc, cargo, cbindgen versions), the capture libraries' versions (libxdp, libbpf, libelf:
# AF_XDP), the patches applied (scripts/patches/suricata-<version>-*.patch) and this recipe's version; a change of any of them builds a new tree beside the old one. `.built` (key=value lines, written last) marks a finished tree, so a second
# call returns at once; the whole build log is kept as build.log beside it (also after a failure, as
# <tree>.failed.log). Builds are serialised by a lock per cache.
#
# Usage: scripts/build-suricata.sh [--version V] [--source PATH] [--options LIST] [--print-prefix]
#   --version V      the release to build (default 8.0.6): the archive is suricata-V.tar.xz in the source dir
#   --source PATH    the archive (.tar.xz/.tar.gz) or an unpacked source tree (default: see above)
#   --options LIST   comma-separated build options: profiling (--enable-profiling-rules), nohyperscan
#                    (--disable-hyperscan); default: profiling
#   --print-prefix   print the install prefix these arguments have (or would have) and exit
# Environment:
#   IDSBENCH_SURICATA_SRC  directory holding the archives (default: <repo>/../shared/src)
#   IDSBENCH_CACHE         the idsbench cache (default: ~/.cache/idsbench)
#   SURICATA_BUILD_JOBS    parallel compiler processes (default: nproc)
# Build dependencies: the Debian packages in scripts/install-system.sh (`make system`); the Rust crates are
# fetched by cargo from its configured registry during the build. Every build has AF_XDP capture (and
# eBPF/XDP, like Debian's Suricata): configure would silently leave it out without libxdp-dev/libbpf-dev/
# libelf-dev, so this script refuses to build without them and checks `suricata --build-info` afterwards.
set -euo pipefail

RECIPE=4  # bump when a change below alters the installed tree (4: no debug info, see DEBUG-INFO below)
version=8.0.6
source=""
options=profiling
print_prefix=0
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    --options) options=$2; shift 2 ;;
    --print-prefix) print_prefix=1; shift ;;
    *) echo "build-suricata: unknown argument $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src_dir=${IDSBENCH_SURICATA_SRC:-$repo/../shared/src}
cache=${IDSBENCH_CACHE:-$HOME/.cache/idsbench}
jobs=${SURICATA_BUILD_JOBS:-$(nproc)}
[ -n "$source" ] || source=$src_dir/suricata-$version.tar.xz

log() { echo "build-suricata: $*" >&2; }
die() { echo "build-suricata: $*" >&2; exit 1; }

[ -e "$source" ] || die "missing source $source: give --source (an archive or a source tree) or set \
IDSBENCH_SURICATA_SRC to the directory holding suricata-$version.tar.xz (see ../shared/src/README.md)"

# Configure flags per option; the list is sorted so "a,b" and "b,a" are the same build.
# DEBUG-INFO: the C and Rust code are compiled without debug info (the binary is stripped of it anyway):
# Suricata's defaults (-g -O2; Cargo's release profile with debug = true) spent a quarter of the build
# writing it. The optimisation is upstream's (-O2 for C, Cargo's release opt-level 3): the same code.
configure=(--disable-gccmarch-native --disable-suricata-update --enable-af-xdp --enable-ebpf CFLAGS=-O2)
export CARGO_PROFILE_RELEASE_DEBUG=false
opt_names=()
for o in $(tr ',' '\n' <<<"$options" | sed '/^$/d' | sort -u); do
  case "$o" in
    profiling) configure+=(--enable-profiling-rules) ;;
    nohyperscan) configure+=(--disable-hyperscan) ;;
    *) die "unknown build option '$o' (known: profiling, nohyperscan)" ;;
  esac
  opt_names+=("$o")
done
opt_label=$(IFS=+; echo "${opt_names[*]:-plain}")

if [ -d "$source" ]; then
  # a source tree: its files' content (not their times) is the identity
  src_sha=$(cd "$source" && find . -type f -not -path './.git/*' -print0 | LC_ALL=C sort -z \
            | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
else
  src_sha=$(sha256sum "$source" | cut -d' ' -f1)
fi
compilers=$( { cc --version 2>/dev/null | head -1; rustc --version 2>/dev/null; cargo --version 2>/dev/null
               cbindgen --version 2>/dev/null; } | tr '\n' ';')
# AF_XDP's libraries (pkg-config name -> Debian package): their versions are part of the build's identity
declare -A xdp_pkgs=([libxdp]=libxdp-dev [libbpf]=libbpf-dev [libelf]=libelf-dev)
xdp_libs=""
for pc in libxdp libbpf libelf; do
  xdp_libs+="$pc=$(pkg-config --modversion "$pc" 2>/dev/null || echo none);"
done
# our patches for this version (scripts/patches/suricata-<version>-*.patch, applied in name order): today
# the profiling clock without cpuid (lfence-ticks), which the stamp records as profiler_clock
patches=()
for p in "$repo"/scripts/patches/suricata-"$version"-*.patch; do [ -e "$p" ] && patches+=("$p"); done
patch_sha=$( (( ${#patches[@]} )) && cat "${patches[@]}" | sha256sum | cut -c1-16 || echo none)
profiler_clock=cpuid-rdtsc-cpuid
for p in "${patches[@]}"; do [[ $p == *-lfence-ticks.patch ]] && profiler_clock=lfence-rdtsc; done
digest=$( { echo "$src_sha"; echo "recipe=$RECIPE configure=${configure[*]}"; echo "$compilers"
            echo "$xdp_libs"; echo "patches=$patch_sha"; } | sha256sum | cut -c1-12)
base=$cache/suricata
prefix=$base/$version-$opt_label-$digest
stamp=$prefix/.built

if [ "$print_prefix" = 1 ]; then
  echo "$prefix"
  exit 0
fi

verify() {
  local out
  out=$("$prefix/bin/suricata" -V 2>&1) || die "$prefix/bin/suricata -V failed: $out"
  grep -q "version $version" <<<"$out" || die "$prefix/bin/suricata -V does not report $version: $out"
  out=$("$prefix/bin/suricata" --build-info 2>&1) || die "$prefix/bin/suricata --build-info failed: $out"
  grep -Eq "AF_XDP support: +yes" <<<"$out" || die "$prefix/bin/suricata --build-info does not say \
'AF_XDP support: yes' (install libxdp-dev, libbpf-dev and libelf-dev with 'make system', then rebuild)"
}

if [ -f "$stamp" ]; then verify; echo "$prefix"; exit 0; fi

mkdir -p "$base"
exec 9>"$base/.lock"
if ! flock -n 9; then
  log "another build holds $base/.lock: waiting for it"
  flock 9
fi
if [ -f "$stamp" ]; then verify; echo "$prefix"; exit 0; fi

for tool in autoreconf libtoolize make cc pkg-config rustc cargo cbindgen; do
  command -v "$tool" >/dev/null || die "$tool is missing: install the build dependencies with \
'make system' (scripts/install-system.sh)"
done
for pc in libxdp libbpf libelf; do
  pkg-config --exists "$pc" || die "${xdp_pkgs[$pc]} is missing (pkg-config $pc): Suricata would be built \
without AF_XDP; install the build dependencies with 'make system' (scripts/install-system.sh)"
done

work=$(mktemp -d "$base/.build-XXXXXX")
build_log=$work/build.log
cleanup() {
  local rc=$?
  if [ $rc -ne 0 ] && [ ! -f "$stamp" ]; then
    cp "$build_log" "$prefix.failed.log" 2>/dev/null || true
    rm -rf "$prefix"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$prefix" "$prefix.failed.log"

step() {  # step NAME CMD...: runs CMD with its output appended to the build log; on failure the log's tail
  local name=$1; shift
  echo "== $name: $*" >>"$build_log"
  if ! "$@" >>"$build_log" 2>&1; then
    tail -40 "$build_log" >&2
    die "$name failed (last lines above; whole log: $prefix.failed.log)"
  fi
}

t0=$(date +%s)
log "building Suricata $version ($opt_label) into $prefix with $jobs jobs (about 6-11 min on 2 cores)"
if [ -d "$source" ]; then
  cp -a "$source" "$work/src"
else
  mkdir "$work/src"
  tar -xf "$source" -C "$work/src" --strip-components=1
fi
cd "$work/src"
for p in "${patches[@]}"; do step "patch $(basename "$p")" patch -p1 -i "$p"; done
[ -x configure ] || step autogen ./autogen.sh
step configure ./configure --prefix="$prefix" --sysconfdir="$prefix/etc" --localstatedir="$prefix/var" \
  "${configure[@]}"
grep -E "AF_XDP support|eBPF support|Hyperscan support|Profiling rules enabled|Rust compiler" "$build_log" \
  | sed 's/^ */build-suricata:   /' >&2 || true
# configure drops AF_XDP silently when a library check fails: stop here rather than after the compile
af_xdp=$(grep -m1 "AF_XDP support:" "$build_log" | awk '{print $NF}')
if [ "$af_xdp" != yes ]; then
  grep -E "checking (for xdp/xsk.h|for xsk_umem__create|for bpf/libbpf.h|for bpf_object__open|for elf_begin)" \
    "$build_log" >&2 || true
  die "configure left AF_XDP out (AF_XDP support: ${af_xdp:-?}): libxdp-dev, libbpf-dev and libelf-dev are \
needed (the checks above say which failed); install them with 'make system' (scripts/install-system.sh)"
fi
step make make -j"$jobs"
step install make install
step install-conf make install-conf
t1=$(date +%s)

strip --strip-unneeded "$prefix/bin/suricata"
verify
hyperscan=$(grep -m1 "Hyperscan support:" "$build_log" | awk '{print $NF}')
profiling=$(grep -m1 "Profiling rules enabled:" "$build_log" | awk '{print $NF}')
size=$(du -sb "$prefix" | cut -f1)
cp "$build_log" "$prefix/build.log"
{
  echo "version=$version"
  echo "options=$opt_label"
  echo "configure=${configure[*]}"
  echo "source=$source"
  echo "source_sha256=$src_sha"
  echo "compilers=$compilers"
  echo "digest=$digest"
  echo "hyperscan=$hyperscan"
  echo "profiling_rules=$profiling"
  echo "af_xdp=$af_xdp"
  echo "patches=$(for p in "${patches[@]}"; do basename "$p"; done | paste -sd, -)"
  echo "profiler_clock=$profiler_clock"
  echo "capture_libs=$xdp_libs"
  echo "jobs=$jobs"
  echo "build_s=$((t1 - t0))"
  echo "installed_bytes=$size"
  echo "built_unix=$t1"
} >"$stamp.tmp"
mv "$stamp.tmp" "$stamp"
log "done in $((t1 - t0)) s; installed $((size / 1048576)) MiB"
echo "$prefix"
