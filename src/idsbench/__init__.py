"""idsbench: reproducible performance testbed for network intrusion-detection sensors."""

__version__ = "0.1.0"
