"""The rootfs builder's parsers: apt sources (deb822 and one-line), apt-cache policy, cache keys."""

from pathlib import Path

import pytest

from idsbench.errors import EnvironmentMissing
from idsbench.infra import rootfs

DEB822 = """\
Types: deb
# http://snapshot.example/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://src.example/debian
Suites: bookworm
Components: main

Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main contrib
"""

ONE_LINE = """\
# a comment
deb [arch=amd64 signed-by=/x.gpg] http://mirror.example/debian bookworm-backports main
deb-src http://mirror.example/debian bookworm main
deb https://third.example/apt nodistro main  # trailing comment
"""

POLICY = """\
suricata:
  Installed: 1:7.0.10-1~bpo12+1
  Candidate: 1:7.0.10-1~bpo12+1
  Version table:
 *** 1:7.0.10-1~bpo12+1 100
        100 http://mirror.example/debian bookworm-backports/main amd64 Packages
        100 /var/lib/dpkg/status
     1:6.0.10-1 500
        500 http://mirror.example/debian bookworm/main amd64 Packages
"""


def test_deb822_keeps_enabled_binary_stanzas_only():
    sources = rootfs.parse_deb822_sources(DEB822)
    assert sources == [
        rootfs.AptSource("http://mirror.example/debian", ("bookworm", "bookworm-updates"), ("main",)),
        rootfs.AptSource("http://security.example/debian-security", ("bookworm-security",),
                         ("main", "contrib")),
    ]


def test_one_line_sources_skip_options_src_and_comments():
    sources = rootfs.parse_one_line_sources(ONE_LINE)
    assert sources == [
        rootfs.AptSource("http://mirror.example/debian", ("bookworm-backports",), ("main",)),
        rootfs.AptSource("https://third.example/apt", ("nodistro",), ("main",)),
    ]


def test_host_sources_read_both_formats(tmp_path: Path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(ONE_LINE)
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822)
    (tmp_path / "sources.list.d" / "x.list.disabled").write_text("deb http://no.example x main\n")
    uris = [s.uri for s in rootfs.host_apt_sources(tmp_path)]
    assert uris == ["http://mirror.example/debian", "https://third.example/apt",
                    "http://mirror.example/debian", "http://security.example/debian-security"]


def test_policy_origin_is_the_installed_versions_archive():
    assert rootfs.parse_policy_origin(POLICY, "1:7.0.10-1~bpo12+1") == (
        "http://mirror.example/debian", "bookworm-backports")
    assert rootfs.parse_policy_origin(POLICY, "1:6.0.10-1") == ("http://mirror.example/debian", "bookworm")
    assert rootfs.parse_policy_origin(POLICY, "9.9") is None


def test_rootfs_sources_keep_this_release_only():
    sources = rootfs.parse_deb822_sources(DEB822) + rootfs.parse_one_line_sources(ONE_LINE)
    text = rootfs.rootfs_sources(sources, "bookworm")
    assert text.splitlines() == [
        "deb http://mirror.example/debian bookworm main",
        "deb http://mirror.example/debian bookworm-updates main",
        "deb http://security.example/debian-security bookworm-security main contrib",
        "deb http://mirror.example/debian bookworm-backports main",
    ]


def test_mirror_prefers_the_suricata_origin_and_needs_the_main_suite():
    sources = rootfs.parse_deb822_sources(DEB822)
    assert rootfs.mirror_for(sources, "bookworm", preferred="http://mirror.example/debian") == \
        "http://mirror.example/debian"
    with pytest.raises(EnvironmentMissing, match="trixie"):
        rootfs.mirror_for(sources, "trixie")


def test_upstream_version_and_cache_key():
    assert rootfs.upstream_version("1:7.0.10-1~bpo12+1") == "7.0.10"
    assert rootfs.upstream_version("7.0.3") == "7.0.3"
    pkg = rootfs.HostPackage("debian", "bookworm", "amd64", "1:7.0.10-1~bpo12+1",
                             "bookworm-backports", "http://mirror.example/debian")
    key = rootfs.cache_key(pkg)
    assert "/" not in key and "7.0.10" in key and key.startswith("debian-bookworm-amd64-")
    assert rootfs.cache_key(pkg, ["b", "a"]) == rootfs.cache_key(pkg, ["a", "b", "a"]) != key
