"""store/ owns every result file: its name is declared once, in store/layout.py, and it is written by a
writer in store/ (store/writers.py and the modules it lists), atomically or a whole row at a time.

Read from the sources with ast: outside store/, a call that writes a file — open() for writing,
Path.write_text/write_bytes, json.dump, os.open with a write flag, shutil's copies, savefig, and the
store's own atomic helpers (which a campaign file must not be written with directly: its writer does
it) — is a defect unless ALLOWED names its function with the reason it writes no campaign directory.
An entry that no longer matches a write is an error too, so the list stays true."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import idsbench
from idsbench.store import layout

ROOT = Path(idsbench.__file__).parent
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
ATOMIC = "idsbench.store.atomic"
# a diagnosis script on its way out of the package (to scripts/, issue 40 item 3): not scanned
MOVING_OUT: set[str] = set()  # modules on their way out of the package (none now)

# (module path under src/idsbench, function) -> why it writes no file of a campaign directory
ALLOWED: dict[tuple[str, str], str] = {
    # the cache (~/.cache/idsbench): builds, images, rule conversions, traces
    ("buildonce.py", "build_once"): "the build lock in the cache",
    ("hosts/wheel.py", "build_wheel"): "the wheel's build lock in the cache",
    ("infra/rootfs.py", "ensure_rootfs"): "a root filesystem in the cache (lock, manifest)",
    ("infra/rootfs.py", "_build"): "a root filesystem being built in the cache (its log, apt sources, policy-rc.d)",
    ("lab/image.py", "ensure_lab_image"): "the lab image's build context in the cache",
    ("lab/image.py", "download_wheels"): "the lab's wheel cache marker",
    ("sensors/rulesets.py", "write_sidecar"): "a converted rule file's sidecar, in the cache",
    ("sensors/snort/ruleload.py", "make_loadable"): "a converted rule file, in the cache's scratch directory",
    ("sensors/snort/ruleprep.py", "_locked_build"): "the rule cache's lock and its converted files",
    ("sensors/snort/ruleprep.py", "builtin_events.build"): "Snort's built-in rules, in the rule cache",
    ("sensors/snort/runtime.py", "runtime_packages"): "the runtime package list, cached",
    ("bypass/suricata.py", "program.compile_to"): "an eBPF program compiled into the cache",
    # the gate's working trees and offline reads (no result file: inputs it builds and reads)
    ("gate/sides.py", "export_tree"): "a temporary source tree exported from git (and its origin note)",
    ("gate/offline.py", "_widen"): "the offline read's own suricata.yaml (event types widened), which only it reads",
    ("setups/container/dockerd.py", "_claim_data_root"): "the private dockerd's data-root lock",
    ("setups/container/dockerd.py", "_write_owner"): "the private dockerd's data-root owner file",
    ("setups/vm/image.py", "ensure_image"): "the guest image's lock in the cache",
    ("setups/vm/image.py", "_build"): "the guest image being built in the cache",
    ("setups/vm/image.py", "_install_init"): "the guest image's init script",
    ("setups/vm/qemu.py", "probe_kvm"): "the KVM probe's verdict, cached",
    ("traffic/pcap.py", "_write_atomic"): "a trace's info, in the trace cache",
    ("traffic/resolve.py", "_builtin"): "a built-in trace's lock in the trace cache",
    ("traffic/rewrite.py", "distinct_copy"): "a rewritten trace in the trace cache",
    ("traffic/synth/generate.py", "synthesize"): "a synthesized trace's record, beside the trace in the cache",
    ("traffic/synth/stream.py", "_Writer.__init__"): "a synthesized trace being written",
    ("traffic/resegment.py", "resegment"): "the re-segmented trace the user names (idsbench trace resegment --out)",
    ("run/truth.py", "_cached"): "the offline alerts of a trace, cached across campaigns",
    # the kernel's files: cgroupfs, sysfs, procfs, devices
    ("execshim.py", "main"): "cgroup.procs of the child's group, and the fds it opens for the child",
    ("infra/cgroups.py", "_write"): "a cgroup control file",
    ("setups/vfio/device.py", "Sysfs.write"): "sysfs (driver binding, SR-IOV)",
    ("setups/vm/qemu.py", "kvm_usable_reason"): "opens /dev/kvm to see whether it can",
    ("lab/net.py", "disable_ipv6"): "a sysctl under /proc/sys",
    ("tune/apply.py", "_run_step"): "/proc/irq/<n>/smp_affinity_list",
    # temporary and private run directories, state, the user's own files
    ("setups/vm/setup.py", "Vm.prepare"): "guest.conf in the VM's private run directory (a tmpdir)",
    ("setups/vm/setup.py", "Vm.launch"): "sensor.argv in the VM's private run directory (a tmpdir)",
    ("setups/vm/guestrun.py", "run_in_guest"): "guest.conf, sensor.argv in the guest run's tmpdir",
    ("hosts/provision.py", "provision"): "ansible's inventory in its tmpdir, provision.log in the lab's log dir",
    ("teardown.py", "TeardownStack._save"): "the teardown state file (state dir)",
    ("teardown.py", "cleanup_stale"): "the teardown state file (state dir)",
    ("tune/apply.py", "_write_undo"): "the tuning undo file (state dir)",
    ("hosts/hostkeys.py", "trust"): "the controller's known_hosts",
    ("lab/keys.py", "host_files"): "a lab host's sshd config and authorized keys",
    ("lab/lab.py", "up"): "the lab's state file",
    ("lab/lab.py", "_build"): "the lab's known_hosts and inventory",
    ("lab/lab.py", "down"): "the lab's state file",
    ("cli/tune.py", "run_plan"): "the tuning plan, to the file the user named",
    ("specdoc.py", "write"): "the spec's reference page, a document of the repository (docs/)",
    ("tune/ansible.py", "write_role"): "an ansible role, to the directory the user named",
    ("cli/trace.py", "cmd_info"): "JSON to stdout",
    ("cli/trace.py", "cmd_synth"): "JSON to stdout",
    ("cli/trace.py", "cmd_resegment"): "JSON to stdout",
    ("sensors/ruleprofile.py", "write_without_category"): "a rule file (an input of a campaign), where the caller says",
    # runners of child processes and the hosts' transport
    ("proc.py", "Supervisor.start"): "a child's stdout/stderr file: the child writes it; the caller names it "
                                     "(a layout constant)",
    ("hosts/link.py", "HostLink.open"): "the ssh link's own log",
    ("hosts/link.py", "HostLink.get"): "a sample's files fetched from its host (the host's store named and wrote "
                                       "them) through store.atomic.receiving: each appears whole or not at all",
    ("hosts/agent.py", "Agent.put"): "an uploaded input (trace, rules) in the agent's work directory on its host",
    ("hosts/agent.py", "main"): "the agent's stdout, its protocol channel",
    # the report renders its figures into memory; store.writers.write_figure writes the files
    ("report/style.py", "save"): "savefig into in-memory buffers",
}


@dataclass(frozen=True)
class Write:
    line: int
    function: str  # qualified: Class.method, outer.inner; <module> at the top level
    kind: str


def _mode(call: ast.Call) -> str | None:
    """The mode of an open()/Path.open()/os.fdopen() that may write; "?" when not a literal."""
    func, kw = call.func, {k.arg: k.value for k in call.keywords}
    builtin = isinstance(func, ast.Name) and func.id == "open"
    if builtin or (isinstance(func, ast.Attribute) and func.attr == "fdopen"):  # open(path, mode)
        mode = call.args[1] if len(call.args) > 1 else kw.get("mode")
    elif isinstance(func, ast.Attribute) and func.attr == "open" and not _is_name(func.value, "os"):  # Path.open(mode)
        mode = call.args[0] if call.args else kw.get("mode")
    else:
        return None
    if mode is None:
        return None
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return mode.value if set(mode.value) & set("wax+") else None
    return "?"


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _kind(call: ast.Call, atomic_names: set[str]) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id in atomic_names:
        return f"store.atomic.{func.id}"
    if isinstance(func, ast.Attribute):
        if _is_name(func.value, "atomic"):
            return f"store.atomic.{func.attr}"
        if func.attr in ("write_text", "write_bytes", "savefig"):
            return func.attr
        if _is_name(func.value, "json") and func.attr == "dump":
            return "json.dump"
        if _is_name(func.value, "shutil") and (func.attr.startswith("copy") or func.attr == "move"):
            return f"shutil.{func.attr}"
        if _is_name(func.value, "os") and func.attr == "open" and len(call.args) > 1:
            flags = {n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", "") for n in ast.walk(call.args[1])}
            if flags & WRITE_FLAGS:
                return "os.open"
    mode = _mode(call)
    return f"open({mode!r})" if mode else None


def writes(source: str) -> list[Write]:
    """Every call in `source` that writes a file, with the function it is in."""
    tree = ast.parse(source)
    atomic_names = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    and node.module == ATOMIC for a in node.names}
    found: list[Write] = []

    def visit(node: ast.AST, qual: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = qual
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{qual}.{child.name}" if qual else child.name
            if isinstance(child, ast.Call) and (kind := _kind(child, atomic_names)):
                found.append(Write(child.lineno, qual or "<module>", kind))
            visit(child, inner)

    visit(tree, "")
    return found


def _outside_store() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted(ROOT.rglob("*.py"))
            if p.relative_to(ROOT).parts[0] != "store" and p.relative_to(ROOT).as_posix() not in MOVING_OUT}


# --- the scanner itself, on small sources -----------------------------------------------------------
def test_the_scanner_finds_a_planted_write():
    planted = '''
import json, os, shutil
from pathlib import Path
from idsbench.store.atomic import write_json as put
from idsbench.store import atomic

def run(sample_dir: Path, doc):
    (sample_dir / "summary.json").write_text(json.dumps(doc))

class Sampler:
    def start(self, path, mode):
        self.fh = open(path, "w", newline="")
        with path.open("a") as fh:
            json.dump({}, fh)
        os.open(path, os.O_WRONLY | os.O_CREAT)
        open(path, mode)
        shutil.copyfile(path, path)
        put(path, {})
        atomic.write_json(path, {})
'''
    assert [(w.function, w.kind) for w in writes(planted)] == [
        ("run", "write_text"), ("Sampler.start", "open('w')"), ("Sampler.start", "open('a')"),
        ("Sampler.start", "json.dump"), ("Sampler.start", "os.open"), ("Sampler.start", "open('?')"),
        ("Sampler.start", "shutil.copyfile"), ("Sampler.start", "store.atomic.put"),
        ("Sampler.start", "store.atomic.write_json")]


def test_the_scanner_leaves_reads_alone():
    reads = '''
import json, os
def f(path):
    open(path).read(); open(path, "rb"); path.open(); path.open("r"); os.open(path, os.O_RDONLY)
    json.dumps({}); json.load(open(path)); path.read_text()
'''
    assert writes(reads) == []


# --- the tree ---------------------------------------------------------------------------------------
def test_no_write_outside_store_but_the_allowed_ones():
    bad, used = [], set()
    for rel, source in _outside_store().items():
        for w in writes(source):
            if (rel, w.function) in ALLOWED:
                used.add((rel, w.function))
            else:
                bad.append(f"{rel}:{w.line} {w.function}: {w.kind}")
    assert bad == [], "write result files through store/ (store/writers.py), or say in ALLOWED why it is no result file"
    stale = sorted(f"{rel} {fn}" for rel, fn in set(ALLOWED) - used)
    assert stale == [], "ALLOWED names functions that write nothing any more: remove them"


# --- the names --------------------------------------------------------------------------------------
# string literals that equal a result file's name but name another file (an installed engine's default config)
OTHER_FILES = {("buildstamp.py", "suricata.yaml"), ("sensors/suricata/built.py", "suricata.yaml"),
               ("sensors/snort/config.py", "snort.lua")}


def file_names() -> dict[str, str]:
    """The layout's file names (values with a dot; the directories' plain words are left out: "cases",
    "search" … are also keys and words), by constant."""
    return {k: v for k, v in vars(layout).items() if k.isupper() and isinstance(v, str) and "." in v}


def literals(source: str, names: set[str]) -> list[tuple[int, str]]:
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names]


def test_the_name_scanner_finds_a_planted_name():
    assert literals('X = "monitor.csv"\ndef f(d):\n    return d / "summary.json", "a monitor.csv"\n',
                    {"monitor.csv", "summary.json"}) == [(1, "monitor.csv"), (3, "summary.json")]


def test_every_result_file_name_is_declared_once_in_the_layout():
    names = file_names()
    assert {"summary.json", "monitor.csv", "counters.csv", "hosts.json", "sender-monitor.csv", "perf.data",
            "rule_profile.csv", "capture-stats.json", "stdout.txt", "vm.json", "inner.json"} <= set(names.values())
    values = list(names.values())
    assert sorted({v for v in values if values.count(v) > 1}) == []
    sources = {p.relative_to(ROOT).as_posix(): p for p in sorted(ROOT.rglob("*.py"))}
    found = [f"{rel}:{line} {value!r}" for rel, p in sources.items() if rel != "store/layout.py" and rel not in MOVING_OUT
             for line, value in literals(p.read_text(), set(values)) if (rel, value) not in OTHER_FILES]
    assert found == [], "use the store.layout constant"
