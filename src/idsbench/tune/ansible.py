"""`tune plan --format ansible --out DIR`: the plan as an Ansible role usable with ansible-playbook.

DIR/tasks/main.yml, handlers/main.yml, defaults/main.yml, templates/suricata-tuning.yaml.j2 (the
overlay), and DIR/../idsbench-tune.yml, a playbook applying the role to localhost. Every change is a
variable in defaults/main.yml; the boot line is off unless `idsbench_tune_boot_line: true`.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import JsonValue

from idsbench.tune.hostplan import GRUB_DROPIN
from idsbench.tune.model import TuningPlan
from idsbench.tune.render import overlay_yaml

OVERLAY_TEMPLATE = "suricata-tuning.yaml.j2"


def _dump(doc: JsonValue, header: str) -> str:
    return f"---\n# {header}\n" + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=1000)


def defaults(plan: TuningPlan) -> dict[str, JsonValue]:
    ethtool: list[JsonValue] = [list(s.argv) for s in plan.host if s.kind == "ethtool" and s.argv]
    irqs: list[JsonValue] = [{"irq": s.irq, "cpus": ",".join(map(str, s.cpus or []))}
                             for s in plan.host if s.kind == "irq"]
    return {
        "idsbench_tune_interface": plan.interface or "",
        "idsbench_tune_suricata_yaml": "/etc/suricata/suricata.yaml",
        "idsbench_tune_overlay_path": "/etc/suricata/idsbench-tuning.yaml",
        "idsbench_tune_include": True,
        "idsbench_tune_ethtool": ethtool,
        "idsbench_tune_irq_affinity": irqs,
        "idsbench_tune_irqbalance_off": any(s.kind == "service" for s in plan.host),
        "idsbench_tune_boot_line": False,
        "idsbench_tune_boot_args": plan.boot_args or "",
        "idsbench_tune_grub_dropin": GRUB_DROPIN,
        "idsbench_tune_restart_suricata": False,
    }


TASKS: list[JsonValue] = [
    {"name": "Suricata tuning overlay", "ansible.builtin.template": {
        "src": OVERLAY_TEMPLATE, "dest": "{{ idsbench_tune_overlay_path }}", "mode": "0644"},
     "notify": "restart suricata"},
    {"name": "Include the overlay at the end of suricata.yaml", "when": "idsbench_tune_include | bool",
     "ansible.builtin.lineinfile": {"path": "{{ idsbench_tune_suricata_yaml }}",
                                    "line": "include: {{ idsbench_tune_overlay_path }}", "insertafter": "EOF"},
     "notify": "restart suricata"},
    {"name": "Stop and disable irqbalance", "when": "idsbench_tune_irqbalance_off | bool",
     "ansible.builtin.service": {"name": "irqbalance", "state": "stopped", "enabled": False}},
    {"name": "NIC settings (ethtool)", "loop": "{{ idsbench_tune_ethtool }}",
     "ansible.builtin.command": {"argv": "{{ item }}"}, "changed_when": True},
    {"name": "IRQ affinity of the NIC's queues", "loop": "{{ idsbench_tune_irq_affinity }}",
     "ansible.builtin.shell": "echo {{ item.cpus }} > /proc/irq/{{ item.irq }}/smp_affinity_list",
     "changed_when": True},
    {"name": "Boot line: isolate the worker CPUs (next boot)", "when": "idsbench_tune_boot_line | bool",
     "ansible.builtin.copy": {"dest": "{{ idsbench_tune_grub_dropin }}", "mode": "0644",
                              "content": "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX {{ idsbench_tune_boot_args }}\"\n"},
     "notify": "update grub"},
]

HANDLERS: list[JsonValue] = [
    {"name": "restart suricata", "when": "idsbench_tune_restart_suricata | bool",
     "ansible.builtin.service": {"name": "suricata", "state": "restarted"}},
    {"name": "update grub", "ansible.builtin.command": {"argv": ["update-grub"]}, "changed_when": True},
]


def write_role(plan: TuningPlan, out: Path, base: dict[str, JsonValue] | None = None) -> list[Path]:
    """Write the role into `out` (created) and a playbook beside it; returns the files written."""
    files = {
        out / "tasks" / "main.yml": _dump(TASKS, "idsbench tune plan: apply the tuned Suricata overlay and host settings"),
        out / "handlers" / "main.yml": _dump(HANDLERS, "idsbench tune plan handlers"),
        out / "defaults" / "main.yml": _dump(defaults(plan), "idsbench tune plan: every change, as variables"),
        out / "templates" / OVERLAY_TEMPLATE: "{% raw %}" + overlay_yaml(plan.suricata, base) + "{% endraw %}\n",
        out.parent / "idsbench-tune.yml": _dump(
            [{"hosts": "all", "become": True, "gather_facts": False, "roles": [out.name]}],
            f"ansible-playbook -i HOST, idsbench-tune.yml (role {out.name})"),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return list(files)
