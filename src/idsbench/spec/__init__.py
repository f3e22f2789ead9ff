"""The experiment spec: typed, frozen, loaded from TOML and validated before anything starts.

- `model.py`: the pydantic sections (`Spec`, `Traffic`, `Sensor`, `Setup` …), each checking its keys;
- `duet.py`: what a `mode = "duet"` spec may vary side by side (`SIDE_AXES`) and its check;
- `load.py`: TOML → `Spec` (`load_spec`, `spec_from_dict`), the duet check included.

A leaf: it imports nothing of idsbench but errors and the leaf host model (`hostspec`), so the campaign
file's reader can type its stored spec with it. Names that registries define — setup kinds, engines,
capture methods — are checked by `plan.check_names` (before anything starts). Once planned, the spec is
not read again: later stages read the plan's cases and `CampaignSettings` (`campaign_settings.py`).
"""

from idsbench.spec.load import load_spec as load_spec
from idsbench.spec.load import spec_from_dict as spec_from_dict
from idsbench.spec.model import AUTO_THREADS as AUTO_THREADS
from idsbench.spec.model import DEFAULT_CONFIG as DEFAULT_CONFIG
from idsbench.spec.model import DEFAULT_RULESET as DEFAULT_RULESET
from idsbench.spec.model import Rate as Rate
from idsbench.spec.model import Search as Search
from idsbench.spec.model import Spec as Spec
from idsbench.spec.model import TraceEntry as TraceEntry
from idsbench.spec.model import parse_size as parse_size
