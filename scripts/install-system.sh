#!/usr/bin/env bash
# Installs the system packages idsbench needs (Debian 12+ or Ubuntu). Idempotent: a no-op when all are present.
# Suricata (and on Debian 12, QEMU >= 8) comes from <codename>-backports; the backports entry is derived
# from the existing Debian apt source (no registry host is written here).
set -euo pipefail

PKGS=(suricata tcpreplay iproute2 ethtool procps util-linux python3-venv python3-pip gcc libc6-dev tcpdump time
      wireshark-common tshark chromium
      podman runc docker.io debootstrap qemu-system-x86 qemu-utils
      ansible-core openssh-client tcpdump e2fsprogs linux-perf
      # Snort 3 and libdaq are built from ../shared/src (scripts/build-snort.sh); their build dependencies:
      build-essential cmake autoconf automake libtool pkg-config flex bison libfl-dev libdumbnet-dev
      libhwloc-dev libluajit-5.1-dev libpcap-dev libpcre2-dev libssl-dev zlib1g-dev liblzma-dev uuid-dev
      libhyperscan-dev libunwind-dev
      # Suricata 8 is built from ../shared/src (scripts/build-suricata.sh): Rust >= 1.75 (Debian 12's
      # rustc-web/cargo-web), cbindgen and its C libraries; libxdp/libbpf/libelf give it AF_XDP capture
      # (and eBPF/XDP, as Debian's own Suricata has; no clang: no eBPF programs are compiled); ccache keeps
      # rebuilds of a source tree that differs in a few files (idsbench gate) to minutes
      rustc-web cargo-web cbindgen libjansson-dev libyaml-dev libcap-ng-dev libmagic-dev liblz4-dev
      libnet1-dev libxdp-dev libbpf-dev libelf-dev ccache
      # Suricata's XDP/eBPF bypass programs, built from its sources (idsbench/sensors/suricata/ebpf.py);
      # bpftool reads the eBPF socket filter's per-flow counters (what it dropped) while Suricata runs
      clang llvm bpftool)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# QEMU 8 or newer: the vm-vfio nested lab's outer VM needs `-device igb` (an SR-IOV NIC) and an emulated
# IOMMU. Debian 12 ships 7.2; its backports have 10, which then runs every VM setup.
. /etc/os-release
qemu_backports=false
if [ "${ID}" = "debian" ]; then
  qv=$(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null || true)
  if [ -z "$qv" ] || ! dpkg --compare-versions "$qv" ge 1:8; then
    case "${VERSION_CODENAME}" in bookworm|bullseye) qemu_backports=true ;; esac
    if $qemu_backports && [ -n "$qv" ]; then missing+=(qemu-system-x86 qemu-utils); fi
  fi
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-system: all system packages present"
  exit 0
fi
echo "install-system: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-system: must run as root to install: ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer once, non-interactively.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections

suricata_target=()
if [ "${ID}" = "debian" ]; then
  codename="${VERSION_CODENAME}"
  bp="/etc/apt/sources.list.d/idsbench-backports.sources"
  if ! grep -rqs -- "${codename}-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    python3 - "$codename" "$bp" <<'PY'
import glob, re, sys
codename, out = sys.argv[1], sys.argv[2]
# deb822 sources first
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in re.split(r"\n\s*\n", open(path).read()):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
        if codename in fields.get("Suites", "").split() and "deb" in fields.get("Types", "").split():
            lines = ["Types: deb", "URIs: " + fields["URIs"], f"Suites: {codename}-backports",
                     "Components: " + fields.get("Components", "main")]
            if "Signed-By" in fields:
                lines.append("Signed-By: " + fields["Signed-By"])
            open(out, "w").write("\n".join(lines) + "\n")
            sys.exit(0)
# one-line format
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        text = open(path).read()
    except OSError:
        continue
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "deb" and codename in parts:
            i = parts.index(codename)
            parts[i] = codename + "-backports"
            open(out.replace(".sources", ".list"), "w").write(" ".join(parts) + "\n")
            sys.exit(0)
sys.exit("install-system: no Debian apt source for %s found to derive backports from; "
         "add a %s-backports entry by hand" % (codename, codename))
PY
  fi
  suricata_target=(-t "${codename}-backports")
fi

apt-get update -qq
# Suricata first (from backports on Debian), then the rest from the main suite.
if printf '%s\n' "${missing[@]}" | grep -qx suricata; then
  apt-get install -y -qq --no-install-recommends "${suricata_target[@]}" suricata
fi
if $qemu_backports; then
  apt-get install -y -qq --no-install-recommends "${suricata_target[@]}" qemu-system-x86 qemu-utils
fi
rest=()
for p in "${missing[@]}"; do
  case "$p" in suricata) ;; qemu-system-x86|qemu-utils) $qemu_backports || rest+=("$p") ;; *) rest+=("$p") ;; esac
done
if [ ${#rest[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${rest[@]}"
fi
# The Debian package may start a suricata service; idsbench runs its own instances.
if command -v service >/dev/null && [ -e /etc/init.d/suricata ]; then service suricata stop >/dev/null 2>&1 || true; fi
echo "install-system: done"
