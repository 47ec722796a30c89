# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm role's node definitions and gres.conf lines, rendered from recorded hosts.

Runs the real chain in ansible-playbook (tests/device/render-slurm-node.yml, which the GPU-host comparison
uses too): topology_facts on a recorded root, then the slurm role's own tasks_from nodes.yml and
gres.conf template, this host being the only compute node. For the
real 2 x H200 guest the expected File=/Cores= come from Slurm itself: `slurmd -G` with
AutoDetect=nvidia on that host (fixtures/topology/h200_vm/slurmd-G-autodetect.txt, recorded by
tests/device/checks/gres.sh).
"""

from __future__ import annotations

import json
import os
import re

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, ROOT, run_playbook
from topology_support import TOPOLOGY_FIXTURES, make_fixtures, recorded_root

pytestmark = pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")

PLAYBOOK = os.path.join(ROOT, "tests", "device", "render-slurm-node.yml")
INVENTORY = "[slurm_controller]\nlocalhost\n[slurm_compute]\nlocalhost\n"


def render(case, tmp_path, **more_vars):
    """(NodeName line, gres.conf lines) of `localhost`, rendered from the recorded case."""
    root = recorded_root(case, tmp_path / "root")
    (tmp_path / "inventory.ini").write_text(INVENTORY, encoding="utf-8")
    # Some recordings lack /proc/meminfo: RealMemory is not what this test is about.
    extra = {"topology_root": root, "render_dir": str(tmp_path),
             "slurm_node_overrides": {"real_memory": 1000}, **more_vars}
    returncode, _report, stderr = run_playbook(PLAYBOOK, "-i", str(tmp_path / "inventory.ini"), "-e", json.dumps(extra))
    assert returncode == 0, stderr
    line = (tmp_path / "node.conf").read_text(encoding="utf-8").strip()
    gres = [text for text in (tmp_path / "gres.conf").read_text(encoding="utf-8").splitlines()
            if text and not text.startswith("#")]
    return line, gres


def file_and_cores(lines):
    return [(re.search(r"File=(\S+)", line).group(1), (re.search(r"Cores=(\S+)", line) or [None, None])[1]) for line in lines]


def test_h200_matches_slurms_own_detection(tmp_path):
    line, gres = render("h200_vm", tmp_path)
    with open(os.path.join(TOPOLOGY_FIXTURES, "h200_vm", "slurmd-G-autodetect.txt"), encoding="utf-8") as handle:
        detected = [text for text in handle if "Gres Name=gpu" in text]
    assert len(detected) == 2
    assert file_and_cores(gres) == file_and_cores(detected)
    assert gres[0] == "NodeName=localhost Name=gpu Type=h200 File=/dev/nvidia0 Cores=0-31"
    assert "Gres=gpu:h200:2" in line.split()


def test_device_files_follow_the_drivers_minor_numbers(tmp_path):
    """hgx_h100's driver numbers /dev/nvidiaN in another order than nvidia-smi's index."""
    line, gres = render("hgx_h100", tmp_path)
    minors = make_fixtures.HGX_MINORS  # what the recorded /proc/driver/nvidia entries say, by index
    assert minors != list(range(8))
    # GPUs 0-3 hang off socket 0 (cores 0-55), 4-7 off socket 1 (cores 56-111); SMT siblings fold onto their core.
    assert file_and_cores(gres) == [("/dev/nvidia%d" % minor, "0-55" if index < 4 else "56-111")
                                    for index, minor in enumerate(minors)]
    assert "Gres=gpu:h100:8" in line.split()


def test_without_the_drivers_entry_the_index_names_the_device(tmp_path):
    _line, gres = render("a100_pcie", tmp_path)
    assert [path for path, _cores in file_and_cores(gres)] == ["/dev/nvidia%d" % index for index in range(8)]


def test_interleaved_sockets_give_slurms_core_indexes(tmp_path):
    """CPU ids alternate between the 2 sockets; Cores= must be Slurm's core indexes, as slurmd maps them
    (fixtures/topology/interleaved_2s/slurmd/: slurmd 22.05 on the same layout through HWLOC_XMLFILE)."""
    line, gres = render("interleaved_2s", tmp_path)
    assert file_and_cores(gres) == [("/dev/nvidia0", "0-7"), ("/dev/nvidia1", "8-15")]
    assert "Gres=gpu:l40s:2" in line.split()
    assert "Sockets=2" in line.split() and "CoresPerSocket=8" in line.split()


def test_slurm_node_name_names_the_node_and_its_gpus(tmp_path):
    """slurm_node_name is the NodeName in both files; the inventory name stays the address."""
    line, gres = render("h200_vm", tmp_path, slurm_node_name="gpu01")
    assert line.split()[:2] == ["NodeName=gpu01", "NodeAddr=localhost"]
    assert [text.split()[0] for text in gres] == ["NodeName=gpu01", "NodeName=gpu01"]


GROUP_PLAYBOOK = """\
- name: Render the node definitions of every compute node
  hosts: slurm_compute
  gather_facts: false
  tasks:
    - name: Render them as the role does
      ansible.builtin.include_role:
        name: trainstack.cluster.slurm
        tasks_from: nodes.yml
        public: true

    - name: Write the lines the templates print
      ansible.builtin.copy:
        content: "{{ {'nodes': __slurm_node_lines, 'gres': __slurm_gres_lines, 'scale': __slurm_scale_settings} | to_json }}"
        dest: "{{ render_dir }}/lines.json"
        mode: "0644"
      run_once: true
"""


def test_nodes_of_one_kind_share_a_line_through_the_role(tmp_path):
    """Five nodes: three alike (one line), one with another GPU count, one with a feature; through nodes.yml."""
    node = {"cpus": 32, "sockets": 2, "cores_per_socket": 8, "threads_per_core": 2, "real_memory": 64000,
            "gpu_count": 2, "gpu_type": "h100", "gpu_files": ["/dev/nvidia0", "/dev/nvidia1"]}
    hosts = {"gpu01": node, "gpu02": node, "gpu03": node,
             "gpu04": dict(node, gpu_count=1, gpu_files=["/dev/nvidia0"]), "gpu05": dict(node, features=["ib"])}
    inventory = {"all": {"vars": {"ansible_connection": "local"},
                         "children": {"slurm_controller": {"hosts": {"gpu01": {}}},
                                      "slurm_compute": {"hosts": {name: {"slurm_node_overrides": o} for name, o in hosts.items()}}}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory), encoding="utf-8")
    (tmp_path / "play.yml").write_text(GROUP_PLAYBOOK, encoding="utf-8")
    returncode, _report, stderr = run_playbook(str(tmp_path / "play.yml"), "-i", str(tmp_path / "inventory.json"),
                                               "-e", json.dumps({"render_dir": str(tmp_path)}))
    assert returncode == 0, stderr
    lines = json.loads((tmp_path / "lines.json").read_text(encoding="utf-8"))
    hardware = "CPUs=32 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=64000"
    assert lines["nodes"] == [
        "NodeName=gpu[01-03] %s Gres=gpu:h100:2 State=UNKNOWN" % hardware,
        "NodeName=gpu04 %s Gres=gpu:h100:1 State=UNKNOWN" % hardware,
        "NodeName=gpu05 %s Gres=gpu:h100:2 Feature=ib State=UNKNOWN" % hardware,
    ]
    assert lines["gres"] == [
        "NodeName=gpu[01-05] Name=gpu Type=h100 File=/dev/nvidia0",
        "NodeName=gpu[01-03,05] Name=gpu Type=h100 File=/dev/nvidia1",
    ]
    # Five nodes: no TreeWidth (Slurm's default), the SlurmdTimeout default.
    assert lines["scale"] == {"SlurmdTimeout": 300}
