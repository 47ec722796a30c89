# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Time hostlist compress/expand on 10 000 names (target: compress < 50 ms). Prints figures, asserts nothing."""

from __future__ import annotations

import os
import random
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'plugins', 'module_utils'))

from _hostlist import compress, expand  # noqa: E402  pylint: disable=wrong-import-position

COUNT = 10000


def best_ms(func, repeat=7):
    return min(timeit.repeat(func, number=1, repeat=repeat)) * 1000


def main():
    rng = random.Random(1)
    sorted_names = ['gpu%05d' % i for i in range(COUNT)]
    shuffled = list(sorted_names)
    rng.shuffle(shuffled)
    gappy = ['rack%02d-n%03d' % (i // 100, i % 100) for i in range(0, 2 * COUNT, 2)]
    mixed = [rng.choice(['gpu', 'cpu', 'node-', 'login']) + str(rng.randint(0, 5000)).zfill(rng.choice([1, 3, 4])) for dummy in range(COUNT)]
    expression = compress(sorted_names)
    many_ranges = compress(gappy)

    print('hostlist benchmark, %d names, best of 7 (Python %s)' % (COUNT, sys.version.split()[0]))
    for label, names in (('compress sorted  ', sorted_names), ('compress shuffled', shuffled),
                         ('compress gaps    ', gappy), ('compress mixed   ', mixed)):
        result = compress(names)
        print('  %s %7.2f ms  -> %d chars' % (label, best_ms(lambda names=names: compress(names)), len(result)))
    for label, expr in (('expand one range ', expression), ('expand many      ', many_ranges)):
        print('  %s %7.2f ms  <- %r' % (label, best_ms(lambda expr=expr: expand(expr)), expr if len(expr) < 40 else expr[:37] + '...'))
    print('  target: compress %d names < 50 ms' % COUNT)


if __name__ == '__main__':
    main()
