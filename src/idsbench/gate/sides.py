"""A side of the gate (BASE or HEAD): what the user named, parsed; made ready to run; its identity.

A side is one of
- `tree`: a Suricata source tree (a checkout, a `git worktree`, an unpacked release): built by the
  project's build path (scripts/build-suricata.sh via the engine `suricata@<tree>`), cached by content;
- `git`: `REPO@REF`, a local git repository and a ref: the ref's commit is exported (`git archive`) into a
  temporary tree (removed when the gate ends) and built as a tree, its identity that commit;
- `engine`: an engine name idsbench knows (`suricata`: the installed one; `suricata@8.0.6`: built from
  its release archive; `suricata@/path/suricata-8.0.6.tar.xz`).
Parsing is pure (`parse_side`); `prepare` exports a git side; `identity` reads the finished build.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from idsbench import proc
from idsbench.errors import InputError, SpecError
from idsbench.sensors.suricata.build import tree_version_of

SideKind = Literal["tree", "git", "engine"]
ORIGIN_FILE = ".idsbench-origin"  # commit=<sha> of an exported tree (scripts/build-suricata.sh reads it)
FIX_SIDE = ("name a Suricata source tree (a directory with configure.ac and src/suricata.c), REPO@REF (a local "
            "git repository and a ref), or an engine: 'suricata' (installed), 'suricata@8.0.6'.")


@dataclass(frozen=True)
class SideRef:
    """A side as parsed: `text` as the user wrote it."""

    label: str                   # "base" | "head"
    text: str
    kind: SideKind
    path: Path | None = None     # tree: the tree; git: the repository
    ref: str | None = None       # git: the ref


def is_suricata_tree(path: Path) -> bool:
    return (path / "configure.ac").is_file() and (path / "src" / "suricata.c").is_file()


def _is_git_repo(path: Path) -> bool:
    return path.is_dir() and ((path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir()))


def parse_side(label: str, text: str) -> SideRef:
    """Classify a side; InputError naming the side and the fix when it is none of the three kinds."""
    text = text.strip()
    if not text:
        raise InputError(f"{label} is empty.", fix=FIX_SIDE)
    path = Path(text).expanduser()
    if path.is_dir():
        if not is_suricata_tree(path):
            raise InputError(f"{label} {text!r} is a directory but not a Suricata source tree (no configure.ac "
                             "and src/suricata.c).", fix=FIX_SIDE)
        return SideRef(label, text, "tree", path.resolve())
    if text == "suricata" or text.startswith(("suricata@", "suricata+")):
        return SideRef(label, text, "engine")
    repo, at, ref = text.rpartition("@")
    if at and repo and ref:
        repo_path = Path(repo).expanduser()
        if not _is_git_repo(repo_path):
            raise InputError(f"{label} {text!r}: {repo!r} is not a git repository.", fix=FIX_SIDE)
        return SideRef(label, text, "git", repo_path.resolve(), ref)
    raise InputError(f"{label} {text!r} does not exist.", fix=FIX_SIDE)


def resolve_commit(repo: Path, ref: str) -> str:
    """The commit `ref` names in `repo`; InputError for an unknown ref."""
    cp = proc.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], check=False)
    sha = cp.stdout.strip()
    if cp.returncode != 0 or not sha:
        raise InputError(f"{repo}@{ref}: git knows no commit {ref!r} in {repo}.",
                         fix="name a branch, tag or commit of that repository (`git -C REPO log --oneline`).")
    return sha


def export_tree(repo: Path, commit: str, into: Path) -> Path:
    """`git archive` of `commit` unpacked into a new directory under `into` (with ORIGIN_FILE)."""
    dest = Path(tempfile.mkdtemp(prefix=f"tree-{commit[:12]}-", dir=into))
    archive = dest.with_suffix(".tar")
    try:
        proc.run(["git", "-C", str(repo), "archive", "--format=tar", "-o", str(archive), commit], timeout=600)
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="tar")
    except (OSError, tarfile.TarError, subprocess.SubprocessError) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise InputError(f"exporting {repo}@{commit[:12]} failed: {exc}", fix="check the repository.") from exc
    finally:
        archive.unlink(missing_ok=True)
    (dest / ORIGIN_FILE).write_text(f"commit={commit}\n")
    if not is_suricata_tree(dest):
        shutil.rmtree(dest, ignore_errors=True)
        raise InputError(f"{repo}@{commit[:12]} is not a Suricata source tree (no configure.ac and src/suricata.c "
                         "at its top).", fix=FIX_SIDE)
    return dest


@dataclass(frozen=True)
class Side:
    """A side ready to run: its engine name (what a spec's `sensor.engine` holds)."""

    ref: SideRef
    engine: str
    tree: Path | None = None     # the tree built (an exported one is removed when the gate ends)
    commit: str | None = None    # git: the commit exported


def prepare(ref: SideRef, workdir: Path) -> Side:
    """The side's engine name; a git side is exported under `workdir` first."""
    if ref.kind == "engine":
        return Side(ref, ref.text)
    if ref.kind == "tree":
        assert ref.path is not None
        if tree_version_of(ref.path) is None:
            raise InputError(f"{ref.label} {ref.text!r}: configure.ac declares no Suricata version "
                             "(AC_INIT([suricata],[X.Y.Z])).", fix=FIX_SIDE)
        return Side(ref, f"suricata@{ref.path}", ref.path)
    assert ref.path is not None and ref.ref is not None
    commit = resolve_commit(ref.path, ref.ref)
    tree = export_tree(ref.path, commit, workdir)
    return Side(ref, f"suricata@{tree}", tree, commit)


@dataclass(frozen=True)
class Identity:
    """gate.json's `base`/`head`: kind, id (commit, tree hash, or engine and version), configure flags."""

    kind: SideKind
    id: str
    flags: str
    name: str                    # as the user wrote it
    engine: str                  # the engine name the campaigns ran
    version: str
    build_s: int | None = None
    make_s: int | None = None
    ccache: str = ""

    def short(self) -> str:
        head = self.id.split("=", 1)[-1]
        return head[:12] if len(head) >= 40 else head


def identity(side: Side, build_info: dict[str, object]) -> Identity:
    """The side's identity from its engine's build record (`BuiltSuricata.build_info()`)."""
    version = str(build_info.get("version", ""))
    flags = str(build_info.get("configure_flags", ""))
    raw = str(build_info.get("build_identity") or "")
    if side.commit:
        ident = side.commit
    elif raw.startswith("commit="):
        ident = raw.removeprefix("commit=")
    elif raw.startswith(("tree=", "archive=")):
        ident = raw
    else:
        ident = f"{side.engine} {version}".strip()
    build_s = build_info.get("build_s")
    make_s = build_info.get("make_s")
    return Identity(side.ref.kind, ident, flags, side.ref.text, side.engine, version,
                    int(build_s) if isinstance(build_s, int) else None,
                    int(make_s) if isinstance(make_s, int) else None, str(build_info.get("ccache") or ""))


def check_distinct(base: Side, head: Side) -> None:
    if base.engine == head.engine:
        raise SpecError(f"BASE and HEAD are the same engine ({base.engine}).",
                        fix="give two different sides; to measure the method's own noise, give two copies of one "
                            "tree (the gate's A/A arm measures it in every run anyway).")
