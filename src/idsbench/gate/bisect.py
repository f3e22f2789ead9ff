"""`idsbench gate --bisect GOOD BAD --repo DIR`: the first commit whose cost differs from GOOD's beyond the
threshold. The commits are those on the ancestry path GOOD..BAD (oldest first); every step is a gate run
GOOD against one commit (each built from the shared build tree: a step recompiles what differs). First
GOOD against BAD sets the direction (regression or improvement; `same` or `unknown` ends it there) and BAD's
effect, then a binary search: a commit that differs in that direction moves the upper end, one that is `same`
the lower. A step the gate leaves `unknown` (its CI straddles the threshold: on a noisy host a commit without
the change often does, within the budget) is placed by its CI against half of BAD's effect, as git bisect
asks "good or bad": wholly on GOOD's side, it is taken as GOOD (the lower end moves); wholly beyond, as BAD.
Only a step whose CI holds that midpoint ends the search with the range still open; a step's gate stops
as soon as its CI is clear of the midpoint (`GateOptions.decide_at_pct`, `verdict.placed`). (Measured: a commit
without the cost came out +0.37% [-2.66, +1.79] after 9 rounds, n = 18, `unknown` at ±2%, against BAD's +28.2%.)

A culprit needs a human to confirm: code layout alone (a function moved, an alignment changed) can move a
build's cost by about 1%, so a commit that touches nothing hot can still be named when the threshold is
that small."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from idsbench import proc
from idsbench.errors import InputError
from idsbench.gate.plan import GateOptions
from idsbench.gate.run import GateRun, run_gate
from idsbench.gate.sides import resolve_commit
from idsbench.gate.verdict import side_of_value

CAVEAT = ("a culprit needs a human to confirm: code layout alone can move a build's cost by about 1%, so rerun "
          "`idsbench gate` on the commit and its parent, and read the change, before blaming it")


@dataclass(frozen=True)
class Step:
    commit: str
    subject: str
    verdict: str                # the gate's verdict on GOOD against this commit
    effect_pct: float | None
    ci_pct: tuple[float, float] | None
    out: str
    side: str = ""              # what the search took it for: the direction, "same" or "unknown" (`side_of`)


@dataclass
class BisectResult:
    good: str
    bad: str
    commits: list[str]
    direction: str | None = None
    culprit: str | None = None
    culprit_subject: str = ""
    open_range: tuple[str, str] | None = None
    steps: list[Step] = field(default_factory=list)
    exit_status: int = 0
    message: str = ""
    caveat: str = CAVEAT


def commits_between(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after GOOD up to BAD on its ancestry path, oldest first; InputError when BAD does not
    descend from GOOD."""
    cp = proc.run(["git", "-C", str(repo), "rev-list", "--reverse", "--ancestry-path", f"{good}..{bad}"],
                  timeout=120, check=False)
    commits = cp.stdout.split()
    if cp.returncode != 0 or not commits:
        raise InputError(f"{repo}: no commits lead from {good[:12]} to {bad[:12]} (BAD must descend from GOOD).",
                         fix="give GOOD as an ancestor of BAD (`git -C REPO merge-base --is-ancestor GOOD BAD`).")
    return commits


def subject(repo: Path, commit: str) -> str:
    cp = proc.run(["git", "-C", str(repo), "log", "-1", "--format=%s", commit], check=False)
    return cp.stdout.strip()


def search(commits: list[str], judge_commit: Callable[[str], str], direction: str) -> tuple[int | None, tuple[int, int]]:
    """Binary search over `commits` (the last known to differ in `direction`): the index of the first that
    differs, or None with the open range (lo, hi) when a step was not settled. Pure: `judge_commit` runs
    the step."""
    lo, hi = -1, len(commits) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        verdict = judge_commit(commits[mid])
        if verdict == direction:
            hi = mid
        elif verdict == "same":
            lo = mid
        else:
            return None, (lo, hi)
    return hi, (lo, hi)


def side_of(verdict: str, ci_pct: tuple[float, float] | None, direction: str, bad_effect_pct: float | None) -> str:
    """What the search takes a step for: `direction` (it differs from GOOD as BAD does) or "same" when the
    gate says so; else, from its CI (percent) against half of BAD's effect, "same" when the whole CI lies on
    GOOD's side, `direction` when beyond; "unknown" when the CI holds the midpoint (or is missing)."""
    if verdict in (direction, "same"):
        return verdict
    if ci_pct is None or bad_effect_pct is None:
        return "unknown"
    side, bad_side = side_of_value(ci_pct, bad_effect_pct / 2.0), 1 if direction == "regression" else -1
    return direction if side == bad_side else ("same" if side == -bad_side else "unknown")


def bisect(repo: Path, good: str, bad: str, out: Path, options: GateOptions,
           log: Callable[[str], None]) -> BisectResult:
    good_sha, bad_sha = resolve_commit(repo, good), resolve_commit(repo, bad)
    commits = commits_between(repo, good_sha, bad_sha)
    result = BisectResult(good_sha, bad_sha, commits)
    log(f"gate bisect: {len(commits)} commit(s) after {good_sha[:12]} up to {bad_sha[:12]}")
    step_options = replace(options, offline=False)

    def gate(commit: str) -> GateRun:
        k = len(result.steps)
        run = run_gate(f"{repo}@{good_sha}", f"{repo}@{commit}", out / f"step{k}-{commit[:12]}", step_options,
                       log=log)
        t = run.doc.traces
        effect = t[0].effect_pct if len(t) == 1 else None
        ci = tuple((x - 1) * 100 for x in t[0].ratio_ci) if len(t) == 1 and t[0].ratio_ci else None
        ci_pct = (ci[0], ci[1]) if ci else None
        side = side_of(run.doc.verdict, ci_pct, result.direction, bad_effect) if result.direction else ""
        result.steps.append(Step(commit, subject(repo, commit), run.doc.verdict, effect, ci_pct,
                                 str(out / f"step{k}-{commit[:12]}"), side))
        taken = f" (taken as {side}: its CI against half of BAD's {bad_effect or 0:+.1f}%)" \
            if side and side != run.doc.verdict else ""
        log(f"gate bisect: step {k}: {commit[:12]} {result.steps[-1].subject!r}: {run.doc.verdict}{taken}")
        return run

    def step_side(commit: str) -> str:
        gate(commit)
        return result.steps[-1].side

    bad_effect: float | None = None

    first = gate(bad_sha)
    if first.doc.verdict not in ("regression", "improvement"):
        result.exit_status = 0 if first.doc.verdict == "same" else 2
        result.message = (f"GOOD and BAD do not differ beyond ±{options.threshold_pct:g}%: nothing to bisect"
                          if first.doc.verdict == "same" else "GOOD against BAD is unknown: widen --budget-s")
        return result
    result.direction = first.doc.verdict
    bad_effect = first.doc.traces[0].effect_pct if len(first.doc.traces) == 1 else None
    rates = [t.rate_pps for t in first.doc.traces if t.rate_pps]
    if rates and step_options.rate_pps is None:  # every later step at the load the first one found
        step_options = replace(step_options, rate_pps=min(rates))
    if bad_effect is not None:  # a step's gate may stop once its CI is clear of the midpoint (side_of)
        step_options = replace(step_options, decide_at_pct=bad_effect / 2.0)
    found, (lo, hi) = search(commits, step_side, result.direction)
    if found is None:
        low = good_sha if lo < 0 else commits[lo]
        result.open_range = (low, commits[hi])
        result.exit_status = 2
        result.message = (f"a step was not settled: the first commit that differs lies after {low[:12]} up to "
                          f"{commits[hi][:12]}; widen --budget-s")
        return result
    result.culprit = commits[found]
    result.culprit_subject = subject(repo, commits[found])
    result.exit_status = 1 if result.direction == "regression" else 0
    result.message = (f"first commit whose cost differs from {good_sha[:12]} ({result.direction}): "
                      f"{commits[found][:12]} {result.culprit_subject!r}")
    return result
