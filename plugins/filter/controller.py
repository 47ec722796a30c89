# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters about the controller process itself.

- preload_filters: an empty string, looked up for its side effect. ansible-core forks a worker process per task and
  host, and the first lookup of any collection filter in a process imports every filter file of the collection
  (the Jinja plugin loader scans them all). A worker forked from a controller that has not looked one up yet pays that
  import again: about 0.25 s of CPU per task and host on a 2-core controller, most of the cost of preflight's checks.
  Ansible templates play names in the controller's main process, so a playbook whose first play name ends in
  ``{{ '' | trainstack.cluster.preload_filters }}`` loads the filters once there, and every worker inherits them.
"""

from __future__ import annotations


def preload_filters(value=''):
    """An empty string; the lookup of this filter is what loads the collection's filters (see the module docstring)."""
    del value
    return ''


class FilterModule:
    def filters(self):
        return {'preload_filters': preload_filters}
