"""guestrun's pure parts: the argv the guest init runs, the init's cgroup2 status line, the shares."""

import subprocess
import sys
from pathlib import Path

import pytest

import idsbench
from idsbench.setups.vm import guest, guestrun
from idsbench.setups.vm.guestrun import GuestCommand, parse_cgroup2, python_paths


def test_guest_argv_sets_environment_and_directory_through_env():
    cmd = GuestCommand(argv=("/venv/bin/python", "-m", "pytest", "a b.py"), env=(("K", "v w"), ("EMPTY", "")),
                       cwd=Path("/work/checkout"))
    assert cmd.guest_argv() == ["env", "-C", "/work/checkout", "K=v w", "EMPTY=", "/venv/bin/python", "-m",
                                "pytest", "a b.py"]
    assert GuestCommand(argv=("true",)).guest_argv() == ["env", "true"]


@pytest.mark.parametrize("env", [(("A=B", "x"),), (("", "x"),)])
def test_guest_argv_refuses_bad_variable_names(env):
    with pytest.raises(ValueError):
        GuestCommand(argv=("true",), env=env).guest_argv()
    with pytest.raises(ValueError):
        GuestCommand(argv=()).guest_argv()


def test_cgroup2_status_line_is_parsed_and_ignored_by_the_setup_parser():
    text = "cgroup2 cpuset cpu io memory pids\nbooted 2\nclock 1.5\nstarted 42\nexited 0 1\n"
    assert parse_cgroup2(text) == ("cpuset", "cpu", "io", "memory", "pids")
    assert parse_cgroup2("booted 2\n") == ()
    st = guest.parse_status(text)
    assert st.booted and st.ncpu == 2 and st.exit_code == 0 and st.failure is None


def test_python_paths_cover_the_package_the_venv_and_its_python():
    paths = python_paths()
    package = Path(idsbench.__file__).resolve()
    assert any(p in package.parents for p in paths)
    assert Path(sys.prefix).resolve() in paths
    assert Path("/usr") not in paths and Path("/") not in paths
    assert len(set(paths)) == len(paths)


def test_guest_conf_leaves_the_capture_nic_unset_in_bash(tmp_path):
    shares = guest.plan_shares(tmp_path / "out dir", [Path("/work/checkout")])
    conf = tmp_path / "guest.conf"
    conf.write_text(guestrun.guest_conf(tmp_path / "out dir", shares))
    done = subprocess.run(["bash", "-c", '. "$1" && echo "[$CAPTURE_IF] ${#MOUNTS[@]} $SAMPLE_DIR"', "_", str(conf)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"[] 6 {(tmp_path / 'out dir').resolve()}"
