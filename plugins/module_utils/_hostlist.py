# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm hostlist expressions, expanded and compressed exactly as Slurm does.

Plain Python (standard library only, no Ansible import) so that modules, filters
and tests share one implementation.  The behaviour mirrors Slurm's
``src/common/hostlist.c`` on a one-dimensional cluster, i.e. what
``scontrol show hostnames`` (:func:`expand`) and ``scontrol show hostlist``
(:func:`compress`) print; ``tests/unit/plugins/filter/test_hostlist.py`` checks it
against the real ``scontrol`` on thousands of random lists.

What Slurm does, and so what this module does:

* Nothing is sorted and nothing is de-duplicated: ``n3,n1,n2,n2`` compresses to
  ``n[3,1-2,2]``.  A host is merged into the range before it only when its
  number is exactly one more than that range's last number.
* A number keeps the width it was written with (``n01`` and ``n1`` are two
  hosts).  Consecutive numbers of different widths merge when the padding of
  neither changes (``n9,n10`` -> ``n[9-10]``, ``n099,n100`` -> ``n[099-100]``,
  but ``n8,n09`` -> ``n[8,09]``).  A range's width is the length of its lower
  bound as written: ``n[8-012]`` is ``n8 .. n12``, ``n[01-1]`` is ``n01``.
* The numeric suffix is the run of trailing ASCII digits; a name without one is
  kept as is (``node-a``, ``gpu1-ib``, ``n1.[1-2]`` for ``n1.1,n1.2``).
* Several brackets in one name are a product; the last bracket is the innermost
  loop and the other brackets are walked from the right, so
  ``a[1-2]b[3-4]c[5-6]`` gives ``a1b3c5 a1b3c6 a2b3c5 a2b3c6 a1b4c5 ...``.
* Names are separated by commas, spaces and tabs outside brackets; empty
  names between separators are skipped.  ``n[1-]`` is ``n1``; inside brackets
  a lower bound may carry leading white space or ``+`` (both count in its width)
  and trailing junk before the ``-``, exactly like C ``strtoul``.
* At most 65536 hosts per range and per expanded bracket prefix.

Where Slurm silently accepts broken input, this module raises
:class:`HostlistError` instead: unbalanced or nested brackets (Slurm turns
``n[1-3`` into the host ``n]``), an empty expression, an empty element inside
brackets, a reversed range, text after the last closing bracket, and numbers of
2**64 - 1 or more (Slurm saturates or wraps them).  By default every host name
must also be a plain host name: ASCII letters, digits, ``-``, ``.`` and ``_``, not
starting with ``-`` or ``.`` (Slurm takes ``gpu01;reboot`` or ``a$(id)`` as node
names; a node list that reaches a command line or a conf file must not).  Pass
``check_names=False`` to get Slurm's behaviour for such names.
"""

from __future__ import annotations

import re

__all__ = ['HostlistError', 'Hostlist', 'expand', 'compress', 'compress_sorted', 'numbered_key', 'parse', 'MAX_RANGE']

MAX_RANGE = 64 * 1024          # hosts in one range, as Slurm's MAX_RANGE
MAX_PREFIX_CNT = 64 * 1024     # hosts in a bracket inside a prefix, as Slurm's MAX_PREFIX_CNT
ULONG_MAX = 2 ** 64 - 1
_DIGITS = '0123456789'
_C_SPACE = ' \t\n\v\f\r'
_SEPARATORS_RE = re.compile(r'[\t, ]+')
_TOKEN_RE = re.compile(r'(?:[^\t, \[\]]|\[[^\[\]]*\])+')
_BRACKET_RE = re.compile(r'[\[\]]')
_NAME_CHARS_RE = re.compile(r'[A-Za-z0-9._-]*')


class HostlistError(ValueError):
    """A hostlist expression or host name that cannot be used."""


class _Range:
    """One Slurm ``hostrange``: ``prefix`` + numbers ``lo..hi`` printed ``width`` wide, or a name without a number."""

    __slots__ = ('prefix', 'lo', 'hi', 'width', 'single')

    def __init__(self, prefix, lo=0, hi=0, width=0, single=False):
        self.prefix = prefix
        self.lo = lo
        self.hi = hi
        self.width = width
        self.single = single

    def count(self):
        return 1 if self.single else self.hi - self.lo + 1

    def names(self):
        if self.single:
            return [self.prefix]
        prefix, width = self.prefix, self.width
        return [prefix + str(num).zfill(width) for num in range(self.lo, self.hi + 1)]

    def numstr(self):
        if self.single:
            return ''
        if self.lo < self.hi:
            return str(self.lo).zfill(self.width) + '-' + str(self.hi).zfill(self.width)
        return str(self.lo).zfill(self.width)


def _zero_padded(num, width):
    """Zeros needed to pad ``num`` to ``width`` (hostlist.c ``_zero_padded``)."""
    return max(width - len(str(num)), 0)


def _width_equiv(n, wn, m, wm):
    """hostlist.c ``_width_equiv``: (compatible, new wn, new wm)."""
    if wn == wm:
        return True, wn, wm
    npad, nmpad = _zero_padded(n, wn), _zero_padded(n, wm)
    mpad, mnpad = _zero_padded(m, wm), _zero_padded(m, wn)
    if npad != nmpad and mpad != mnpad:
        return False, wn, wm
    if npad != nmpad:
        return True, wn, wn
    return True, wm, wm


def _strnat_key(text):
    """Slurm compares prefixes with ``strnatcmp``, which skips white space.

    Two prefixes that contain no white space are equal for strnatcmp exactly when
    they are equal strings; only names carrying newlines or similar differ.
    """
    for char in _C_SPACE:
        if char in text:
            return ''.join(c for c in text if c not in _C_SPACE)
    return text


def _same_prefix(left, right):
    """hostrange_prefix_cmp() == 0."""
    if left.single != right.single:
        return False
    return left.prefix == right.prefix or _strnat_key(left.prefix) == _strnat_key(right.prefix)


def _within_range(left, right):
    """hostrange_within_range(): both belong in one bracket."""
    return right is not None and not left.single and not right.single and _same_prefix(left, right)


def _strtoul(text):
    """C ``strtoul(text, &end, 10)``: (value, index of end); end 0 means no conversion."""
    pos, size = 0, len(text)
    while pos < size and text[pos] in _C_SPACE:
        pos += 1
    negative = False
    if pos < size and text[pos] in '+-':
        negative = text[pos] == '-'
        pos += 1
    start = pos
    while pos < size and text[pos] in _DIGITS:
        pos += 1
    if pos == start:
        return 0, 0
    value = int(text[start:pos])
    if value > ULONG_MAX:
        value = ULONG_MAX
    elif negative:
        value = (-value) % (ULONG_MAX + 1)
    return value, pos


def _parse_single_range(text):
    """hostlist.c ``_parse_single_range``: '3', '01-08', '5-' -> (lo, hi, width)."""
    if 'x' in text:
        raise HostlistError("invalid range '%s': 'x' is not allowed in a range" % text)
    if text == '':
        raise HostlistError('empty element between brackets')
    low_text, dash, high_text = text.partition('-')
    if high_text.startswith('-'):
        raise HostlistError("invalid range '%s': negative numbers are not allowed" % text)
    lo, low_end = _strtoul(low_text)
    if low_end == 0:
        raise HostlistError("invalid range '%s': it does not start with a number" % text)
    if dash and high_text:
        hi, high_end = _strtoul(high_text)
        if high_end != len(high_text):
            raise HostlistError("invalid range '%s': '%s' is not a number" % (text, high_text))
    else:
        hi = lo
        if low_end != len(low_text):
            raise HostlistError("invalid range '%s': '%s' is not a number" % (text, low_text))
    if hi >= ULONG_MAX or lo >= ULONG_MAX:
        raise HostlistError("invalid range '%s': number too large" % text)
    if lo > hi:
        raise HostlistError("invalid range '%s': reversed range (%d > %d)" % (text, lo, hi))
    if hi - lo + 1 > MAX_RANGE:
        raise HostlistError("invalid range '%s': more than %d hosts in one range" % (text, MAX_RANGE))
    return lo, hi, len(low_text)


def _parse_range_list(text):
    """Comma separated numbers and ranges between brackets."""
    return [_parse_single_range(part) for part in text.split(',')]


def _check_brackets(expr):
    """Brackets must come in non-nested '[' ... ']' pairs (Slurm guesses instead)."""
    depth = 0
    for match in _BRACKET_RE.finditer(expr):
        if match.group() == '[':
            if depth:
                raise HostlistError("nested '[' at position %d in hostlist '%s'" % (match.start(), expr))
            depth = 1
        else:
            if not depth:
                raise HostlistError("unbalanced ']' at position %d in hostlist '%s'" % (match.start(), expr))
            depth = 0
    if depth:
        raise HostlistError("unbalanced '[' (no closing ']') in hostlist '%s'" % expr)


class Hostlist:
    """An ordered list of host ranges, built the way Slurm's hostlist_push does it."""

    def __init__(self):
        self.ranges = []

    # -- building -------------------------------------------------------------------------
    def _push(self, prefix, lo, hi, width):
        """hostlist_push_range(): join the tail when ``lo`` follows it directly."""
        ranges = self.ranges
        if ranges:
            tail = ranges[-1]
            if tail.hi == lo - 1 and not tail.single and (tail.prefix == prefix or _strnat_key(tail.prefix) == _strnat_key(prefix)):
                compatible, tail_width = _width_equiv(tail.lo, tail.width, lo, width)[:2]
                if compatible:
                    tail.width = tail_width
                    tail.hi = hi
                    return
        ranges.append(_Range(prefix, lo, hi, width))

    def push_host(self, name):
        """hostlist_push_host(): one host name, split into prefix and numeric suffix."""
        prefix = name.rstrip(_DIGITS)
        if len(prefix) == len(name):
            self.ranges.append(_Range(name, single=True))
            return
        suffix = name[len(prefix):]
        num = int(suffix)
        if num >= ULONG_MAX:
            raise HostlistError("host name '%s': numeric suffix too large" % name)
        self._push(prefix, num, num, len(suffix))

    def _push_range_list(self, prefix, ranges):
        """hostlist.c ``_push_range_list``: expand brackets left in ``prefix``."""
        open_at = prefix.rfind('[')
        close_at = prefix.rfind(']', open_at + 1) if open_at >= 0 else -1
        if close_at < 0:
            push = self._push
            for lo, hi, width in ranges:
                push(prefix, lo, hi, width)
            return
        head, tail = prefix[:open_at], prefix[close_at + 1:]
        recurse = '[' in head
        count = 0
        for lo, hi, width in _parse_range_list(prefix[open_at + 1:close_at]):
            count += hi - lo + 1
            if count > MAX_PREFIX_CNT:
                raise HostlistError("more than %d hosts in bracket '%s'" % (MAX_PREFIX_CNT, prefix[open_at:close_at + 1]))
            for num in range(lo, hi + 1):
                new_prefix = head + str(num).zfill(width) + tail
                if recurse:
                    self._push_range_list(new_prefix, ranges)
                else:
                    push = self._push
                    for r_lo, r_hi, r_width in ranges:
                        push(new_prefix, r_lo, r_hi, r_width)

    def push(self, expr):
        """hostlist_push(): add every host of a hostlist expression."""
        if not isinstance(expr, str):
            raise HostlistError('a hostlist expression must be a string, got %s' % type(expr).__name__)
        if '[' not in expr and ']' not in expr:
            for token in _SEPARATORS_RE.split(expr):
                if token:
                    self.push_host(token)
            return
        _check_brackets(expr)
        for token in _TOKEN_RE.findall(expr):
            if '[' not in token:
                self.push_host(token)
                continue
            open_at = token.rfind('[')
            close_at = token.index(']', open_at)
            if close_at != len(token) - 1:
                raise HostlistError("invalid host '%s': text after the last ']' (Slurm accepts only 'prefix[ranges]')" % token)
            self._push_range_list(token[:open_at], _parse_range_list(token[open_at + 1:close_at]))

    # -- reading ----------------------------------------------------------------------------
    def __len__(self):
        return sum(r.count() for r in self.ranges)

    def names(self):
        """All host names in order (``scontrol show hostnames``)."""
        out = []
        for rng in self.ranges:
            out.extend(rng.names())
        return out

    def ranged_string(self):
        """The compressed form (``scontrol show hostlist``)."""
        ranges = self.ranges
        total = len(ranges)
        parts = []
        i = 0
        while i < total:
            first = ranges[i]
            following = ranges[i + 1] if i + 1 < total else None
            if not (first.count() > 1 or _within_range(first, following)):
                parts.append(first.prefix + first.numstr())
                i += 1
                continue
            numbers = [first.numstr()]
            i += 1
            while i < total and _within_range(ranges[i], ranges[i - 1]):
                numbers.append(ranges[i].numstr())
                i += 1
            parts.append('%s[%s]' % (first.prefix, ','.join(numbers)))
        return ','.join(parts)


def _items(value):
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise HostlistError('expected a string or a list of strings, got %s' % type(value).__name__)


# A host name is at most 253 characters (RFC 1035's limit for a domain name, which Slurm's names sit inside).
_MAX_NAME = 253


def _check_host_names(hostlist):
    """Every name of ``hostlist`` must be a plain host name (the numbers of a range are digits: check prefixes)."""
    for rng in hostlist.ranges:
        prefix = rng.prefix
        if len(prefix) + (0 if rng.single else len(str(rng.hi))) > _MAX_NAME:
            raise HostlistError("invalid host name %r...: longer than %d characters" % (prefix[:20], _MAX_NAME))
        end = _NAME_CHARS_RE.match(prefix).end()
        if end == len(prefix) and prefix[:1] not in ('-', '.'):
            continue
        first = prefix if rng.single else prefix + str(rng.lo).zfill(rng.width)
        if end != len(prefix):
            raise HostlistError("invalid host name %r: %s is not allowed in a host name (only letters, digits, '-', '.' and '_')"
                                % (first, _char_name(prefix[end])))
        raise HostlistError("invalid host name %r: a host name must not start with %r" % (first, prefix[0]))


def _char_name(char):
    names = {' ': 'a space', '\t': 'a tab', '\n': 'a newline', '\r': 'a carriage return'}
    if char in names:
        return names[char]
    if char.isprintable():
        return repr(char)
    return 'the control character %s' % ascii(char)


def parse(value, allow_empty=False, check_names=True):
    """A :class:`Hostlist` from an expression or a list of expressions / names.

    ``check_names``: refuse host names that are not plain host names (see the module's description).
    """
    hostlist = Hostlist()
    items = _items(value)
    for item in items:
        if not isinstance(item, str):
            raise HostlistError('host names must be strings, got %s %r' % (type(item).__name__, item))
        if not allow_empty and not item.strip(_C_SPACE + ','):
            raise HostlistError('empty host name or hostlist expression')
        hostlist.push(item)
    if not allow_empty and not hostlist.ranges:
        raise HostlistError('empty hostlist')
    if check_names:
        _check_host_names(hostlist)
    return hostlist


def expand(value, allow_empty=False, check_names=True):
    """Host names of a hostlist expression, as ``scontrol show hostnames`` prints them."""
    return parse(value, allow_empty, check_names).names()


def compress(value, allow_empty=False, check_names=True):
    """Compressed hostlist of names or expressions, as ``scontrol show hostlist`` prints it."""
    return parse(value, allow_empty, check_names).ranged_string()


_NUMBERED_RE = re.compile(r'(.*?)([0-9]*)\Z', re.S)


def numbered_key(name):
    """Sort key of a host name: gpu9 before gpu10, all of one prefix together."""
    prefix, number = _NUMBERED_RE.match(name).groups()
    return (prefix, int(number) if number else -1, name)


def compress_sorted(names):
    """Compressed hostlist of ``names`` sorted by number, without repeats (whatever order they came in)."""
    return compress(sorted(set(names), key=numbered_key))
