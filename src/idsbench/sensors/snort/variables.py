"""Rule variables for Snort 3 equal to Suricata's, so both engines read a rule alike.

Snort's stock snort.lua sets HOME_NET = EXTERNAL_NET = 'any'; Suricata's default config sets
HOME_NET to the private ranges and EXTERNAL_NET = !$HOME_NET. With different variables a rule such as
`$HOME_NET any -> $EXTERNAL_NET any` matches different traffic in each engine, so the Snort adapter
takes Suricata's address and port groups (from its default config when readable, else the values
Suricata 7 ships).
"""

from __future__ import annotations

import re
from pathlib import Path

from idsbench.errors import EnvironmentMissing

Variables = tuple[tuple[str, str], ...]

SURICATA_7_VARIABLES: Variables = (
    ("HOME_NET", "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"), ("EXTERNAL_NET", "!$HOME_NET"),
    ("HTTP_SERVERS", "$HOME_NET"), ("SMTP_SERVERS", "$HOME_NET"), ("SQL_SERVERS", "$HOME_NET"),
    ("DNS_SERVERS", "$HOME_NET"), ("TELNET_SERVERS", "$HOME_NET"), ("AIM_SERVERS", "$EXTERNAL_NET"),
    ("DC_SERVERS", "$HOME_NET"), ("DNP3_SERVER", "$HOME_NET"), ("DNP3_CLIENT", "$HOME_NET"),
    ("MODBUS_CLIENT", "$HOME_NET"), ("MODBUS_SERVER", "$HOME_NET"), ("ENIP_CLIENT", "$HOME_NET"),
    ("ENIP_SERVER", "$HOME_NET"),
    ("HTTP_PORTS", "80"), ("SHELLCODE_PORTS", "!80"), ("ORACLE_PORTS", "1521"), ("SSH_PORTS", "22"),
    ("DNP3_PORTS", "20000"), ("MODBUS_PORTS", "502"), ("FILE_DATA_PORTS", "[$HTTP_PORTS,110,143]"),
    ("FTP_PORTS", "21"), ("GENEVE_PORTS", "6081"), ("VXLAN_PORTS", "4789"), ("TEREDO_PORTS", "3544"),
)
_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def from_suricata_config(config: dict[str, object]) -> Variables:
    """`vars.address-groups` then `vars.port-groups` of a Suricata config, in file order."""
    out: list[tuple[str, str]] = []
    variables = config.get("vars")
    if not isinstance(variables, dict):
        return ()
    for group in ("address-groups", "port-groups"):
        values = variables.get(group)
        if not isinstance(values, dict):
            continue
        for name, value in values.items():
            if isinstance(name, str) and _NAME.match(name) and isinstance(value, (str, int)):
                out.append((name, str(value)))
    return tuple(out)


def rule_variables(suricata_config: Path | None = None) -> Variables:
    """Suricata's address/port groups (its default config), or Suricata 7's shipped values."""
    from idsbench.sensors.suricata.config import DEFAULT_CONFIG, load_default_config

    try:
        found = from_suricata_config(load_default_config(suricata_config or DEFAULT_CONFIG))
    except EnvironmentMissing:
        found = ()
    return found or SURICATA_7_VARIABLES
