"""cgroups against fake v1/v2 trees in tmp_path; a tiny fake kernel populates new groups."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from idsbench.errors import EnvironmentMissing, SpecError
from idsbench.infra import cgroups

MiB = 2**20
REAL_MKDIR, REAL_RMDIR = os.mkdir, os.rmdir


class FakeKernel:
    """Emulates what the kernel does in cgroupfs: interface files on mkdir, subtree_control
    merging '+ctrl' writes, rmdir refusing groups with tasks or children, cgroup.kill."""

    def __init__(self, root: Path, *, v2: bool, controllers: str = "cpuset cpu io memory pids",
                 swap: bool = True, peak: bool = True):
        self.root, self.v2, self.swap, self.peak = root, v2, swap, peak
        self.writes: list[tuple[Path, str]] = []
        if v2:
            self._files(root, {"cgroup.controllers": controllers, "cgroup.subtree_control": "",
                               "cgroup.procs": "", "cpuset.cpus.effective": "0-3"})

    @staticmethod
    def _files(d: Path, files: dict[str, str]) -> None:
        for name, text in files.items():
            (d / name).write_text(text)

    def add_v1_hierarchy(self, name: str, memsw: bool = True) -> Path:
        h = self.root / name
        h.mkdir()
        self._populate_v1(h, name, memsw)
        if name == "cpuset":
            self._files(h, {"cpuset.cpus": "0-3", "cpuset.mems": "0", "cpuset.effective_cpus": "0-3"})
        return h

    def _populate_v1(self, d: Path, hierarchy: str, memsw: bool = True) -> None:
        files = {"cgroup.procs": ""}
        if "cpu" in hierarchy.split(","):
            files |= {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "-1"}
        if "cpuacct" in hierarchy.split(","):
            files |= {"cpuacct.usage": "0"}
        if hierarchy == "memory":
            files |= {"memory.limit_in_bytes": "9223372036854771712", "memory.usage_in_bytes": "0",
                      "memory.max_usage_in_bytes": "0", "memory.failcnt": "0", "memory.swappiness": "60",
                      "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"}
            if memsw:
                files["memory.memsw.limit_in_bytes"] = "9223372036854771712"
        if hierarchy == "cpuset":
            files |= {"cpuset.cpus": "", "cpuset.mems": "", "cpuset.effective_cpus": ""}
        self._files(d, files)

    def mkdir(self, path: os.PathLike | str, mode: int = 0o777, *a: object, **kw: object) -> None:
        p = Path(path)
        REAL_MKDIR(p, mode)
        if self.v2:
            self._files(p, {"cgroup.subtree_control": "", "cgroup.procs": "", "cgroup.kill": "",
                            "cpu.stat": "usage_usec 0\n"})
            self._v2_controllers(p, (p.parent / "cgroup.subtree_control").read_text().split())
        else:
            hierarchy = p.relative_to(self.root).parts[0]
            self._populate_v1(p, Path(os.path.realpath(self.root / hierarchy)).name,
                              memsw=(self.root / hierarchy / "memory.memsw.limit_in_bytes").exists()
                              or hierarchy != "memory")

    def _v2_controllers(self, d: Path, ctrls: list[str]) -> None:
        """A v2 group gets a controller's files when its parent enables it (also later)."""
        files = {"cgroup.controllers": " ".join(ctrls)}
        if "cpu" in ctrls:
            files["cpu.max"] = "max 100000"
        if "memory" in ctrls:
            files |= {"memory.current": "0", "memory.max": "max",
                      "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"}
            if self.swap:
                files["memory.swap.max"] = "max"
            if self.peak:
                files["memory.peak"] = "0"
        if "cpuset" in ctrls:
            files["cpuset.cpus"] = ""
        self._files(d, {k: v for k, v in files.items() if k == "cgroup.controllers" or not (d / k).exists()})

    def rmdir(self, path: os.PathLike | str) -> None:
        p = Path(path)
        if not p.is_dir():
            raise FileNotFoundError(errno.ENOENT, "gone", str(p))
        if any(c.is_dir() for c in p.iterdir()) or (p / "cgroup.procs").read_text().split():
            raise OSError(errno.EBUSY, "busy", str(p))
        for f in p.iterdir():
            f.unlink()
        REAL_RMDIR(p)

    def write(self, path: Path, value: str) -> None:
        self.writes.append((path, value))
        if path.name == "cgroup.subtree_control":
            have = path.read_text().split()
            allowed = (path.parent / "cgroup.controllers").read_text().split()
            for tok in value.split():
                if tok[1:] not in allowed:
                    raise OSError(errno.ENOENT, "No such file or directory", str(path))
                have.append(tok[1:])
            path.write_text(" ".join(dict.fromkeys(have)))
            for child in (c for c in path.parent.iterdir() if c.is_dir()):
                self._v2_controllers(child, path.read_text().split())
        elif path.name == "cgroup.kill":
            (path.parent / "cgroup.procs").write_text("")
        else:
            path.write_text(value)


@pytest.fixture
def kernel_v2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    k = FakeKernel(tmp_path, v2=True)
    monkeypatch.setattr(os, "mkdir", k.mkdir)
    monkeypatch.setattr(os, "rmdir", k.rmdir)
    monkeypatch.setattr(cgroups, "_write", k.write)
    return k


@pytest.fixture
def kernel_v1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    k = FakeKernel(tmp_path, v2=False)
    monkeypatch.setattr(os, "mkdir", k.mkdir)
    monkeypatch.setattr(os, "rmdir", k.rmdir)
    monkeypatch.setattr(cgroups, "_write", k.write)
    return k


def test_parse_cpu_list() -> None:
    assert cgroups.parse_cpu_list("0-2,5,7-8\n") == [0, 1, 2, 5, 7, 8]
    assert cgroups.parse_cpu_list("") == []


def test_detect_version(tmp_path: Path, kernel_v2: FakeKernel) -> None:
    assert cgroups.detect_version(tmp_path) == 2


def test_detect_version_v1_and_missing(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentMissing, match="No cgroup filesystem"):
        cgroups.detect_version(tmp_path)
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "cgroup.procs").write_text("")
    assert cgroups.detect_version(tmp_path) == 1


@pytest.mark.parametrize("kwargs, match", [
    ({"cpus": 0}, "cpus"), ({"cpus": -1.0}, "cpus"), ({"cpus": 0.001}, "cpus"),
    ({"memory_bytes": 1 * MiB}, "memory"), ({"cpuset": []}, "cpuset"), ({"cpuset": [-1]}, "cpuset"),
    ({"swappiness": 300}, "swappiness"),
])
def test_bad_values_are_spec_errors(tmp_path: Path, kernel_v2: FakeKernel, kwargs: dict, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        cgroups.create("s0", root=tmp_path, **kwargs)
    assert not (tmp_path / "idsbench").exists()


@pytest.mark.parametrize("name", ["", "a/b", "..", "cgroup.procs"])
def test_bad_names(tmp_path: Path, kernel_v2: FakeKernel, name: str) -> None:
    with pytest.raises(SpecError, match="name"):
        cgroups.create(name, root=tmp_path)


def test_v2_create_sets_limits(tmp_path: Path, kernel_v2: FakeKernel) -> None:
    cg = cgroups.create("s0", cpus=1.5, memory_bytes=256 * MiB, cpuset=[1, 2], root=tmp_path)
    d = tmp_path / "idsbench" / "s0"
    assert cg.version == 2 and cg.paths == [d]
    assert cg.procs_files == [d / "cgroup.procs"]
    assert (d / "cpu.max").read_text() == "150000 100000"
    assert (d / "memory.max").read_text() == str(256 * MiB)
    assert (d / "memory.swap.max").read_text() == "0"
    assert (d / "cpuset.cpus").read_text() == "1,2"
    for group in (tmp_path, tmp_path / "idsbench"):
        assert set((group / "cgroup.subtree_control").read_text().split()) == {"cpu", "memory", "cpuset"}
    assert cg.warnings == []


def test_v2_without_limits_only_needs_memory(tmp_path: Path, kernel_v2: FakeKernel) -> None:
    cg = cgroups.create("s0", root=tmp_path)
    assert (tmp_path / "cgroup.subtree_control").read_text().split() == ["memory"]
    assert not any(p.name == "cpu.max" for p, _ in kernel_v2.writes)
    cg.remove()


def test_v2_missing_controller_names_it_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    k = FakeKernel(tmp_path, v2=True, controllers="io memory pids")
    monkeypatch.setattr(os, "mkdir", k.mkdir)
    monkeypatch.setattr(cgroups, "_write", k.write)
    with pytest.raises(EnvironmentMissing) as ei:
        cgroups.create("s0", cpus=1.0, root=tmp_path)
    assert "'cpu' controller" in str(ei.value)
    assert "cgroup.subtree_control" in (ei.value.fix or "")
    assert not (tmp_path / "idsbench" / "s0").exists()


def test_v2_stats(tmp_path: Path, kernel_v2: FakeKernel) -> None:
    cg = cgroups.create("s0", memory_bytes=64 * MiB, root=tmp_path)
    d = cg.paths[0]
    (d / "cpu.stat").write_text("usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n")
    (d / "memory.current").write_text("1048576\n")
    (d / "memory.peak").write_text("2097152\n")
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 17\noom 2\noom_kill 3\n")
    (d / "cgroup.procs").write_text("10\n11\n")
    assert cg.cpu_usage_ns() == 1_234_567_000
    assert cg.memory_bytes() == 1_048_576
    assert cg.memory_peak_bytes() == 2_097_152
    assert cg.oom_kills() == 3
    assert cg.memory_failcnt() == 17
    assert cg.pids() == [10, 11]


def test_v2_peak_falls_back_to_max_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    k = FakeKernel(tmp_path, v2=True, peak=False, swap=False)
    monkeypatch.setattr(os, "mkdir", k.mkdir)
    monkeypatch.setattr(cgroups, "_write", k.write)
    cg = cgroups.create("s0", memory_bytes=64 * MiB, root=tmp_path)
    assert any("swap" in w for w in cg.warnings)  # no memory.swap.max: said, not hidden
    cur = cg.paths[0] / "memory.current"
    cur.write_text("5000")
    assert cg.memory_bytes() == 5000
    cur.write_text("3000")
    assert cg.memory_peak_bytes() == 5000


def test_v2_remove_kills_and_removes_parent(tmp_path: Path, kernel_v2: FakeKernel) -> None:
    cg = cgroups.create("s0", root=tmp_path)
    (cg.paths[0] / "cgroup.procs").write_text("4242\n")
    cg.remove()
    assert (cg.paths[0] / "cgroup.kill", "1") in kernel_v2.writes
    assert not (tmp_path / "idsbench").exists()
    cg.remove()  # already gone: fine


def test_v2_remove_keeps_parent_used_by_another_group(tmp_path: Path, kernel_v2: FakeKernel) -> None:
    a = cgroups.create("a", root=tmp_path)
    b = cgroups.create("b", root=tmp_path)
    a.remove()
    assert (tmp_path / "idsbench" / "b").is_dir() and not (tmp_path / "idsbench" / "a").exists()
    cgroups.remove_paths([str(p) for p in b.paths])  # stale-cleanup form: strings from a state file
    assert not (tmp_path / "idsbench").exists()


def test_existing_group_is_reported(tmp_path: Path, kernel_v2: FakeKernel) -> None:
    cgroups.create("s0", root=tmp_path)
    with pytest.raises(EnvironmentMissing, match="already exists") as ei:
        cgroups.create("s0", root=tmp_path)
    assert "idsbench cleanup" in (ei.value.fix or "")


def test_cpuset_outside_available_cpus(tmp_path: Path, kernel_v2: FakeKernel) -> None:
    with pytest.raises(SpecError, match=r"\[7\]"):
        cgroups.create("s0", cpuset=[1, 7], root=tmp_path)


def test_v2_swappiness_nonzero_is_a_warning(tmp_path: Path, kernel_v2: FakeKernel) -> None:
    cg = cgroups.create("s0", memory_bytes=64 * MiB, swappiness=10, root=tmp_path)
    assert any("swappiness=10 ignored" in w for w in cg.warnings)


def test_v1_separate_hierarchies(tmp_path: Path, kernel_v1: FakeKernel) -> None:
    for h in ("cpu", "cpuacct", "memory", "cpuset"):
        kernel_v1.add_v1_hierarchy(h)
    cg = cgroups.create("s0", cpus=0.25, memory_bytes=128 * MiB, cpuset=[3], root=tmp_path)
    assert cg.version == 1
    assert sorted(p.relative_to(tmp_path).parts[0] for p in cg.paths) == ["cpu", "cpuacct", "cpuset", "memory"]
    assert len(cg.procs_files) == 4
    assert (tmp_path / "cpu/idsbench/s0/cpu.cfs_quota_us").read_text() == "25000"
    mem = tmp_path / "memory/idsbench/s0"
    assert (mem / "memory.limit_in_bytes").read_text() == str(128 * MiB)
    assert (mem / "memory.memsw.limit_in_bytes").read_text() == str(128 * MiB)
    assert (mem / "memory.swappiness").read_text() == "60"  # untouched: memsw already blocks swap
    assert (tmp_path / "cpuset/idsbench/cpuset.cpus").read_text() == "0-3"  # parent seeded from root
    assert (tmp_path / "cpuset/idsbench/s0/cpuset.cpus").read_text() == "3"
    assert (tmp_path / "cpuset/idsbench/s0/cpuset.mems").read_text() == "0"
    (tmp_path / "cpuacct/idsbench/s0/cpuacct.usage").write_text("987654321\n")
    (mem / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (mem / "memory.failcnt").write_text("41\n")
    (mem / "memory.memsw.failcnt").write_text("1\n")
    assert cg.cpu_usage_ns() == 987_654_321 and cg.oom_kills() == 2 and cg.memory_failcnt() == 42
    cg.remove()
    assert not any((tmp_path / h / "idsbench").exists() for h in ("cpu", "cpuacct", "memory", "cpuset"))


def test_v1_combined_cpu_cpuacct_is_one_directory(tmp_path: Path, kernel_v1: FakeKernel) -> None:
    kernel_v1.add_v1_hierarchy("cpu,cpuacct")
    (tmp_path / "cpu").symlink_to("cpu,cpuacct")
    (tmp_path / "cpuacct").symlink_to("cpu,cpuacct")
    kernel_v1.add_v1_hierarchy("memory")
    cg = cgroups.create("s0", cpus=2, root=tmp_path)
    assert len(cg.paths) == 2 and cg.dirs["cpu"] == cg.dirs["cpuacct"]
    assert (tmp_path / "cpu,cpuacct/idsbench/s0/cpu.cfs_quota_us").read_text() == "200000"
    cg.remove()


def test_v1_without_swap_accounting_uses_swappiness(tmp_path: Path, kernel_v1: FakeKernel) -> None:
    kernel_v1.add_v1_hierarchy("cpuacct")
    kernel_v1.add_v1_hierarchy("memory", memsw=False)
    cg = cgroups.create("s0", memory_bytes=64 * MiB, root=tmp_path)
    mem = tmp_path / "memory/idsbench/s0"
    assert not (mem / "memory.memsw.limit_in_bytes").exists()
    assert (mem / "memory.swappiness").read_text() == "0"
    assert cg.warnings and "swappiness=0" in cg.warnings[0]


def test_v1_missing_memory_hierarchy(tmp_path: Path, kernel_v1: FakeKernel) -> None:
    kernel_v1.add_v1_hierarchy("cpuacct")
    kernel_v1.add_v1_hierarchy("cpu")
    with pytest.raises(EnvironmentMissing, match="'memory' controller") as ei:
        cgroups.create("s0", root=tmp_path)
    assert "mount -t cgroup -o memory" in (ei.value.fix or "")
    assert not (tmp_path / "cpuacct" / "idsbench" / "s0").exists()


def test_v2_parent_not_left_behind_when_enabling_fails(tmp_path: Path, kernel_v2: FakeKernel,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = kernel_v2.write

    def refuse_in_parent(path: Path, value: str) -> None:
        if path.parent.name == "idsbench" and path.name == "cgroup.subtree_control":
            raise OSError(errno.EBUSY, "Device or resource busy", str(path))
        real_write(path, value)

    monkeypatch.setattr(cgroups, "_write", refuse_in_parent)
    with pytest.raises(EnvironmentMissing, match="Could not enable") as ei:
        cgroups.create("s0", cpus=1.0, root=tmp_path)
    assert "Device or resource busy" in str(ei.value)
    assert not (tmp_path / "idsbench").exists()


def test_v2_group_pins_the_shared_parent_before_its_controllers_are_enabled(
        tmp_path: Path, kernel_v2: FakeKernel, monkeypatch: pytest.MonkeyPatch) -> None:
    """A concurrent run's remove may rmdir the shared `idsbench` parent whenever it is empty; our
    group inside it keeps it (and the controllers enabled there) until our limits are written."""
    real_write = kernel_v2.write
    group_existed: list[bool] = []

    def watch(path: Path, value: str) -> None:
        if path == tmp_path / "idsbench" / "cgroup.subtree_control":
            group_existed.append((tmp_path / "idsbench" / "s0").is_dir())
        real_write(path, value)

    monkeypatch.setattr(cgroups, "_write", watch)
    cg = cgroups.create("s0", cpus=0.5, memory_bytes=64 * 2**20, root=tmp_path)
    assert group_existed and all(group_existed)
    assert (cg.paths[0] / "cpu.max").read_text() == "50000 100000"


def test_mkdir_group_retries_when_the_shared_parent_vanishes_meanwhile(
        tmp_path: Path, kernel_v2: FakeKernel, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.makedirs(exist_ok=True) raises FileExistsError when mkdir saw the parent and it was
    # removed before makedirs checked it was a directory (seen on a real v2 kernel, 3 racing runs).
    real_makedirs = os.makedirs
    calls: list[object] = []

    def vanishing(path: os.PathLike[str] | str, *args: object, **kwargs: object) -> None:
        calls.append(path)
        if len(calls) == 1:
            raise FileExistsError(errno.EEXIST, "File exists", str(path))
        real_makedirs(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "makedirs", vanishing)
    cg = cgroups.create("s0", cpus=1.0, root=tmp_path)
    assert len(calls) == 2 and (cg.paths[0] / "cpu.max").read_text() == "100000 100000"


def test_v1_cpuset_parent_is_filled_while_our_group_pins_it(tmp_path: Path, kernel_v1: FakeKernel,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for h in ("cpu", "cpuacct", "memory", "cpuset"):
        kernel_v1.add_v1_hierarchy(h)
    real_write = kernel_v1.write
    group_existed: list[bool] = []

    def watch(path: Path, value: str) -> None:
        if path.parent == tmp_path / "cpuset" / "idsbench":
            group_existed.append((tmp_path / "cpuset" / "idsbench" / "s0").is_dir())
        real_write(path, value)

    monkeypatch.setattr(cgroups, "_write", watch)
    cg = cgroups.create("s0", cpuset=[2], root=tmp_path)
    assert group_existed == [True, True]  # cpuset.cpus and cpuset.mems of the parent
    assert (cg.dirs["cpuset"] / "cpuset.cpus").read_text() == "2"


def test_v2_listed_controllers_are_still_written_and_a_refusal_then_is_fine(
        tmp_path: Path, kernel_v2: FakeKernel, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel lists a controller in subtree_control before the children's files exist (another
    run is enabling it right now); our own write waits for that. Where we may not write (a
    delegated group) but the controller is enabled, that is enough."""
    (tmp_path / "cgroup.subtree_control").write_text("cpu memory")
    real_write = kernel_v2.write

    def refuse_root(path: Path, value: str) -> None:
        if path == tmp_path / "cgroup.subtree_control":
            kernel_v2.writes.append((path, value))
            raise OSError(errno.EBUSY, "Device or resource busy", str(path))
        real_write(path, value)

    monkeypatch.setattr(cgroups, "_write", refuse_root)
    cg = cgroups.create("s0", cpus=1.0, memory_bytes=64 * 2**20, root=tmp_path)
    root_writes = [v for p, v in kernel_v2.writes if p == tmp_path / "cgroup.subtree_control"]
    assert sorted(root_writes) == ["+cpu", "+memory"]
    assert (cg.paths[0] / "cpu.max").read_text() == "100000 100000"
