"""The vm setup in the spec and the registry."""

import pytest

from idsbench.errors import SpecError
from idsbench.setups.base import SetupRequest
from idsbench.setups.registry import make_setup
from idsbench.setups.vm.setup import Vm
from idsbench.spec import spec_from_dict


def test_vm_kind_and_keys_are_accepted():
    spec = spec_from_dict({"name": "v", "setup": {"kinds": ["baremetal", "vm"], "vcpus": 2, "accel": "tcg"}})
    assert spec.setup.kinds == ["baremetal", "vm"]
    assert spec.setup.vcpus == 2 and spec.setup.accel == "tcg"
    assert spec_from_dict({"name": "v"}).setup.accel == "auto"


@pytest.mark.parametrize("bad", [{"vcpus": 0}, {"accel": "hvf"}])
def test_bad_vm_keys_are_spec_errors(bad):
    with pytest.raises(SpecError, match="setup"):
        spec_from_dict({"name": "v", "setup": {"kinds": "vm", **bad}})


def test_registry_builds_a_vm_with_the_request_options(tmp_path):
    req = SetupRequest(sup=None, engine=None, name="x", sample_dir=tmp_path, vcpus=3, accel="tcg")  # type: ignore[arg-type]
    vm = make_setup("vm", req)
    assert isinstance(vm, Vm) and vm.kind == "vm"
    assert vm.opts.vcpus == 3 and vm.opts.accel == "tcg"
    assert vm.capture_interface() == "eth0"
