import pytest

from idsbench.errors import InputError
from idsbench.traffic.resolve import builtin_params, builtin_path


def test_builtin_with_parameters():
    p = builtin_params("mixed?packets=3000&rate_pps=1000")
    assert (p.profile, p.packets, p.rate_pps) == ("mixed", 3000, 1000.0)
    assert builtin_path("mixed?packets=3000", "/c") != builtin_path("mixed", "/c")
    assert builtin_path("mixed", "/c") == builtin_path("mixed", "/c")


@pytest.mark.parametrize("ref,needle", [
    ("mixed?pkts=3", "unknown parameter 'pkts'"), ("mixed?packets=x", "not a number"),
    ("nope", "unknown generated trace"), ("mixed?packets=0", "1..")])
def test_builtin_parameter_errors_name_the_reference(ref, needle):
    with pytest.raises(InputError) as err:
        builtin_params(ref)
    assert needle in str(err.value)
