"""Sensor adapters: the common counter schema (base) and one module per engine."""

from idsbench.sensors.base import CounterPoint, Counters, SensorAdapter, SensorRun
from idsbench.sensors.suricata import Suricata, SuricataRun

__all__ = ["CounterPoint", "Counters", "SensorAdapter", "SensorRun", "Suricata", "SuricataRun"]
