"""Sensor engines behind one adapter protocol (base), picked by name (registry)."""

from idsbench.sensors.base import CounterPoint, Counters, SensorEngine, SensorOptions, SensorRun

__all__ = ["CounterPoint", "Counters", "SensorEngine", "SensorOptions", "SensorRun"]
