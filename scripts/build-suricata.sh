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
# Cheap to repeat (idsbench gate builds a base and a head that differ in a few files):
# - every build compiles through ccache (CCACHE_DIR = <cache>/ccache unless set; paths relative to the
#   build tree, the working directory not hashed), so a file compiled before is not compiled again;
# - a source TREE (a directory) is built in place in one build tree per version and options,
#   <cache>/suricata/trees/<version>-<options>/src: the tree's files are copied over it, only those whose
#   content differs (their mtime is then the copy's, so make and cargo rebuild exactly what changed; files
#   the tree no longer has are deleted), configure runs once per flags, and Cargo's target directory is
#   <cache>/suricata/cargo-target/<version>-<options> (rust/target links to it). Every tree of one version
#   and options is configured with the same --prefix (<cache>/suricata/trees/<version>-<options>/prefix),
#   installed with DESTDIR and moved to its own prefix (text files' paths rewritten; the binary keeps the
#   compiled-in one, recorded as compiled_prefix). Builds of trees are serialised by the cache's lock, so
#   two trees never share the build tree at once.
# - the build's identity goes into .built: identity = commit=<sha> for a git work tree (+dirty when it
#   has uncommitted changes) or a tree exported from git (a file .idsbench-origin holding commit=<sha>,
#   left out of the content hash), else tree=<content sha256> or archive=<sha256>; configure = the flags.
#
# Usage: scripts/build-suricata.sh [--version V] [--source PATH] [--options LIST] [--print-prefix]
#   --version V      the release to build (default 8.0.6): the archive is suricata-V.tar.xz in the source dir
#   --source PATH    the archive (.tar.xz/.tar.gz) or an unpacked source tree (default: see above)
#   --options LIST   comma-separated build options: profiling (--enable-profiling-rules), nohyperscan
#                    (--disable-hyperscan); default: profiling
#   --print-prefix   print the install prefix these arguments have (or would have) and exit
#   --commit SHA     the commit a source tree was exported from (its identity; else read as above)
# Environment:
#   IDSBENCH_SURICATA_SRC  directory holding the archives (default: <repo>/../shared/src)
#   IDSBENCH_CACHE         the idsbench cache (default: ~/.cache/idsbench)
#   SURICATA_BUILD_JOBS    parallel compiler processes (default: nproc)
#   CCACHE_DIR             ccache's directory (default: <cache>/ccache); IDSBENCH_NO_CCACHE=1 builds without it
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
commit=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    --options) options=$2; shift 2 ;;
    --print-prefix) print_prefix=1; shift ;;
    --commit) commit=$2; shift 2 ;;
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

ORIGIN_FILE=.idsbench-origin  # commit=<sha> of a tree exported from git (idsbench gate REPO@REF)
manifest=""
if [ -d "$source" ]; then
  source=$(cd "$source" && pwd -P)
  [ -f "$source/configure.ac" ] && [ -f "$source/src/suricata.c" ] || die "$source is not a Suricata source \
tree (no configure.ac and src/suricata.c): give a checkout, an unpacked release or an archive"
  git_top=$(git -C "$source" rev-parse --show-toplevel 2>/dev/null || true)
  if [ "$git_top" != "$source" ] && { [ -f "$source/config.status" ] || [ -d "$source/rust/target" ]; }; then
    die "$source has been configured or built in place (config.status, rust/target): its build outputs \
would be taken for sources; run 'make distclean' there, or give a clean tree or REPO@REF"
  fi
  # the tree's source files ("<sha256>  <path>" lines in path order): a git work tree's tracked and
  # untracked-but-not-ignored files, else every file; the content (not the times) is the identity
  manifest=$(mktemp "${TMPDIR:-/tmp}/suricata-manifest.XXXXXX")
  trap 'rm -f "$manifest"' EXIT
  { if [ "$git_top" = "$source" ]; then git -C "$source" ls-files -z -co --exclude-standard
    else (cd "$source" && find . \( -type f -o -type l \) -not -path './.git/*' -printf '%P\0'); fi; } \
    | (cd "$source" && while IFS= read -r -d '' f; do
         [ "$f" != "$ORIGIN_FILE" ] && { [ -f "$f" ] || [ -L "$f" ]; } && printf '%s\0' "$f"; done) \
    | LC_ALL=C sort -z | (cd "$source" && xargs -0 -r sha256sum) >"$manifest"
  [ -s "$manifest" ] || die "no source files found in $source"
  src_sha=$(sha256sum <"$manifest" | cut -d' ' -f1)
  if [ -z "$commit" ] && [ "$git_top" = "$source" ]; then
    commit=$(git -C "$source" rev-parse HEAD 2>/dev/null || true)
    [ -n "$commit" ] && [ -n "$(git -C "$source" status --porcelain --untracked-files=no 2>/dev/null)" ] \
      && commit="$commit+dirty"
  fi
  [ -z "$commit" ] && [ -f "$source/$ORIGIN_FILE" ] && commit=$(sed -n 's/^commit=//p' "$source/$ORIGIN_FILE")
  identity=${commit:+commit=$commit}
  identity=${identity:-tree=$src_sha}
  layout=tree-in-place-1  # tree builds: shared build tree, one compiled-in prefix (above)
else
  src_sha=$(sha256sum "$source" | cut -d' ' -f1)
  identity=archive=$src_sha
  layout=""
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
            echo "$xdp_libs"; echo "patches=$patch_sha"; [ -z "$layout" ] || echo "layout=$layout"; } \
          | sha256sum | cut -c1-12)
base=$cache/suricata
prefix=$base/$version-$opt_label-$digest
stamp=$prefix/.built
tree_home=$base/trees/$version-$opt_label        # tree builds: the shared build tree and compiled-in prefix
cargo_target=$base/cargo-target/$version-$opt_label

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
  [ -z "$manifest" ] || rm -f "$manifest"
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

# ccache: objects keyed by their preprocessed input, paths relative to the build tree (CCACHE_BASEDIR)
# and the working directory left out of the hash (it is in the debug info only: the binary is stripped)
cc_cmd=${CC:-cc}
ccache_stats() { ccache --print-stats 2>/dev/null \
  | awk -F'\t' '$1=="direct_cache_hit"||$1=="preprocessed_cache_hit"{h+=$2} $1=="cache_miss"{m+=$2} END{print h+0, m+0}'; }
use_ccache=no
if [ "${IDSBENCH_NO_CCACHE:-0}" != 1 ] && command -v ccache >/dev/null; then
  use_ccache=yes
  export CCACHE_DIR=${CCACHE_DIR:-$cache/ccache} CCACHE_NOHASHDIR=1 CCACHE_COMPILERCHECK=content
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
  cc_cmd="ccache $cc_cmd"
  read -r hits0 misses0 < <(ccache_stats)
else
  log "building without ccache (${IDSBENCH_NO_CCACHE:+IDSBENCH_NO_CCACHE=1}${IDSBENCH_NO_CCACHE:-not installed: 'make system'}): a rebuild compiles every file again"
fi

t0=$(date +%s)
incremental=no
synced=all
if [ -d "$source" ]; then
  # the tree's files over the shared build tree, only those whose content differs (the copy's mtime is
  # now: make and cargo rebuild what changed, nothing else); files the previous tree had and this one
  # has not are deleted. Our patches are applied after the copy (a patched file differs from its source,
  # so it is copied again next time and patched again: ccache serves its object).
  build_src=$tree_home/src
  mkdir -p "$build_src" "$cargo_target"
  [ -f "$build_src/config.status" ] && incremental=yes
  log "building Suricata $version ($opt_label, $identity) into $prefix in $build_src with $jobs jobs" \
      "($([ $incremental = yes ] && echo "incremental" || echo "first tree of this version: about 6-11 min on 2 cores"))"
  cut -c67- "$manifest" >"$work/paths"
  (cd "$build_src" && tr '\n' '\0' <"$work/paths" | xargs -0 -r sha256sum 2>/dev/null || true) >"$work/have"
  awk 'FILENAME==ARGV[1]{have[substr($0,67)]=substr($0,1,64); next}
       have[substr($0,67)]!=substr($0,1,64){print substr($0,67)}' "$work/have" "$manifest" >"$work/copy"
  if [ -f "$tree_home/paths" ]; then
    LC_ALL=C comm -23 <(LC_ALL=C sort "$tree_home/paths") <(LC_ALL=C sort "$work/paths") >"$work/gone"
    (cd "$build_src" && tr '\n' '\0' <"$work/gone" | xargs -0 -r rm -f)
  else
    : >"$work/gone"
  fi
  if [ -s "$work/copy" ]; then
    (cd "$source" && tr '\n' '\0' <"$work/copy" | tar -cf - --null -T -) | (cd "$build_src" && tar -xf - --touch)
  fi
  cp "$work/paths" "$tree_home/paths"
  synced="$(wc -l <"$work/copy") copied, $(wc -l <"$work/gone") deleted"
  log "sources: $synced"
  echo "== sources: $synced" >>"$build_log"
  head -50 "$work/copy" | sed 's/^/   /' >>"$build_log"
  [ -L "$build_src/rust/target" ] || { rm -rf "$build_src/rust/target"; mkdir -p "$build_src/rust"; ln -s "$cargo_target" "$build_src/rust/target"; }
  compiled_prefix=$tree_home/prefix
  cd "$build_src"
  for p in "${patches[@]}"; do step "patch $(basename "$p")" patch -p1 -i "$p"; done
  configured="CC=$cc_cmd ./configure --prefix=$compiled_prefix ${configure[*]}"
  [ -x configure ] || { step autogen ./autogen.sh; rm -f config.status; }
  if [ ! -f config.status ] || [ "$(cat "$tree_home/configured" 2>/dev/null)" != "$configured" ]; then
    rm -f "$tree_home/configured"
    step configure env CC="$cc_cmd" ./configure --prefix="$compiled_prefix" --sysconfdir="$compiled_prefix/etc" \
      --localstatedir="$compiled_prefix/var" "${configure[@]}"
    echo "$configured" >"$tree_home/configured"
    grep -E "^ +[A-Za-z].*: " "$build_log" >"$tree_home/configure.summary" || true
  else
    echo "== configure: kept from the previous tree ($configured); its summary:" >>"$build_log"
    cat "$tree_home/configure.summary" >>"$build_log" 2>/dev/null || true
  fi
else
  compiled_prefix=$prefix
  log "building Suricata $version ($opt_label) into $prefix with $jobs jobs (about 6-11 min on 2 cores)"
  mkdir "$work/src"
  tar -xf "$source" -C "$work/src" --strip-components=1
  cd "$work/src"
  for p in "${patches[@]}"; do step "patch $(basename "$p")" patch -p1 -i "$p"; done
  [ -x configure ] || step autogen ./autogen.sh
  step configure env CC="$cc_cmd" ./configure --prefix="$prefix" --sysconfdir="$prefix/etc" \
    --localstatedir="$prefix/var" "${configure[@]}"
fi
[ "$use_ccache" = no ] || export CCACHE_BASEDIR=$PWD
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
t_make=$(date +%s)
step make make -j"$jobs"
t_made=$(date +%s)
if [ -d "$source" ]; then
  # installed under DESTDIR at the compiled-in prefix, then moved to this tree's own prefix
  stage=$work/stage
  step install make install DESTDIR="$stage"
  step install-conf make install-conf DESTDIR="$stage"
  mkdir -p "$(dirname "$prefix")"
  mv "$stage$compiled_prefix" "$prefix"
  grep -rlIZ -F "$compiled_prefix" "$prefix" | xargs -0 -r sed -i "s|$compiled_prefix|$prefix|g"
else
  step install make install
  step install-conf make install-conf
fi
t1=$(date +%s)
ccache_line=""
if [ "$use_ccache" = yes ]; then
  read -r hits1 misses1 < <(ccache_stats)
  ccache_line="hits=$((hits1 - hits0)) misses=$((misses1 - misses0))"
fi

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
  echo "make_s=$((t_made - t_make))"
  echo "identity=$identity"
  echo "commit=$commit"
  echo "compiled_prefix=$compiled_prefix"
  echo "incremental=$incremental"
  echo "synced=$synced"
  echo "ccache=$use_ccache${ccache_line:+ $ccache_line}"
  echo "installed_bytes=$size"
  echo "built_unix=$t1"
} >"$stamp.tmp"
mv "$stamp.tmp" "$stamp"
log "done in $((t1 - t0)) s (make $((t_made - t_make)) s${ccache_line:+; ccache $ccache_line}); installed $((size / 1048576)) MiB"
echo "$prefix"
