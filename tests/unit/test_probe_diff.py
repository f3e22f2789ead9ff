"""probe.diff / load / diff_paths and `idsbench probe --diff` exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idsbench.cli.main import main
from idsbench.errors import InputError
from idsbench.probe.diff import diff, diff_paths, load
from idsbench.probemodel import HostProbe

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "probes"


def base() -> HostProbe:
    return load(FIXTURES / "two_socket_i40e.json")


def changed(p: HostProbe, **update: object) -> HostProbe:
    return p.model_copy(update=update)


def test_identical_probes_and_volatile_values_do_not_differ():
    a = base()
    b = changed(a, created_unix=a.created_unix + 3600, notes=["something"],
                cpufreq=a.cpufreq.model_copy(update={"cur_khz": 1234}),
                timers=a.timers.model_copy(update={"cpuid_rdtsc_ns": a.timers.cpuid_rdtsc_ns * 1.15}))
    assert diff(a, b) == []


def test_kernel_parameter_and_timer_jump_are_reported():
    a = base()
    b = changed(a, cmdline=a.cmdline + " isolcpus=1-10",
                boot=a.boot.model_copy(update={"isolcpus": "1-10"}),
                timers=a.timers.model_copy(update={"cpuid_rdtsc_ns": 7400.0}))
    paths = {d.path: d for d in diff(a, b)}
    assert set(paths) == {"cmdline", "boot.isolcpus", "timers.cpuid_rdtsc_ns"}
    assert paths["boot.isolcpus"].old is None and paths["boot.isolcpus"].new == "1-10"
    assert str(paths["boot.isolcpus"]) == 'boot.isolcpus: (absent) → "1-10"'


def test_interface_changes_keyed_by_name():
    a = base()
    nic = a.interfaces["ens1f0"]
    irqs = [nic.irqs[0]] + [i.model_copy(update={"number": i.number + 1}) for i in nic.irqs[1:]]
    b = changed(a, interfaces={"ens1f0": nic.model_copy(update={"queues": 10, "irqs": irqs})})
    assert [d.path for d in diff(a, b)] == ["interfaces.ens1f0.queues"]  # IRQ renumbering is noise


def test_load_errors_name_the_input(tmp_path):
    with pytest.raises(InputError, match="holds no probe.json"):
        load(tmp_path)
    bad = tmp_path / "x.json"
    bad.write_text("{")
    with pytest.raises(InputError, match="not JSON"):
        load(bad)
    bad.write_text('{"cpu": {"model": "x"}}')
    with pytest.raises(InputError, match="not an idsbench probe"):
        load(bad)


def make_campaign(root: Path, name: str, probe: HostProbe, overrides: dict[str, object]) -> Path:
    d = root / name
    d.mkdir()
    (d / "probe.json").write_text(probe.to_json())
    (d / "campaign.json").write_text(json.dumps({"spec": {"sensor": {"set": overrides}}}))
    return d


def test_campaign_diff_includes_spec_set_overrides(tmp_path):
    a = base()
    b = changed(a, boot=a.boot.model_copy(update={"nohz_full": "1-10"}))
    ca = make_campaign(tmp_path, "a", a, {"detect.profile": "medium", "af-packet.0.threads": 2})
    cb = make_campaign(tmp_path, "b", b, {"detect.profile": "high", "af-packet.0.threads": 2})
    assert [str(d) for d in diff_paths(ca, cb)] == [
        'boot.nohz_full: (absent) → "1-10"', 'spec.sensor.set.detect.profile: "medium" → "high"']


def test_cli_diff_exit_codes(tmp_path, capsys):
    a = base()
    fa, fb = tmp_path / "a.json", tmp_path / "b.json"
    fa.write_text(a.to_json())
    fb.write_text(a.to_json())
    assert main(["probe", "--diff", str(fa), str(fb)]) == 0
    fb.write_text(changed(a, kernel="6.12.0").to_json())
    assert main(["probe", "--diff", str(fa), str(fb)]) == 1
    assert 'kernel: "6.1.0-18-amd64" → "6.12.0"' in capsys.readouterr().out
    assert main(["probe", "--diff", str(fa), str(tmp_path / "missing.json")]) == 2
