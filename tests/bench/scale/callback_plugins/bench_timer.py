# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wall-clock marks of every play and task start, written as JSON for tests/bench/bench_scale.py.

Enabled by the benchmark only (ANSIBLE_CALLBACKS_ENABLED=bench_timer, BENCH_TIMER_OUT=<file>). With the linear
strategy a task ends when the next one starts, so the marks give each task's time over all hosts. Each task's mark
also counts the hosts it returned a result for and says whether it is run_once; a play's mark carries its
bench_target play variable.
"""

from __future__ import annotations

import json
import os
import resource
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: bench_timer
type: aggregate
short_description: play and task start times for the scale benchmark
description:
  - Writes the wall-clock time of every play and task start to the file named by E(BENCH_TIMER_OUT).
requirements:
  - enabled in callbacks_enabled
"""


class CallbackModule(CallbackBase):
    """Record (kind, name, time) at each play and task start, and the end of the run."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'bench_timer'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._marks = []
        self._tasks = {}

    def _mark(self, kind, name, **more):
        mark = dict(more, kind=kind, name=name, time=time.time())
        self._marks.append(mark)
        return mark

    def v2_playbook_on_play_start(self, play):
        self._mark('play', play.get_name(), target=str((play.vars or {}).get('bench_target', '')))

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._tasks[task._uuid] = self._mark('task', task.get_name(), hosts=0,  # pylint: disable=protected-access
                                             run_once=bool(task.run_once))

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def _count(self, result):
        mark = self._tasks.get(result._task._uuid)  # pylint: disable=protected-access
        if mark is not None:
            mark['hosts'] += 1

    def v2_runner_on_ok(self, result):
        self._count(result)

    def v2_runner_on_skipped(self, result):
        self._count(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result)

    def v2_runner_on_unreachable(self, result):
        self._count(result)

    def v2_playbook_on_stats(self, stats):
        self._mark('end', '')
        path = os.environ.get('BENCH_TIMER_OUT')
        if not path:
            return
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with open(path, 'w', encoding='utf-8') as handle:
            json.dump({'marks': self._marks, 'max_rss_kib': usage.ru_maxrss,
                       'cpu_s': usage.ru_utime + usage.ru_stime}, handle)
