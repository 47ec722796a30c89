# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Strict checker for NCCL topology XML (test helper, not shipped).

Encodes the rules of NCCL's hand-written parser (src/graph/xml.cc) and of its
topology loader as summarised in docs/reference nccl-topology-format.md, plus
this project's portability choices (<= 32 children, well below 256 elements,
real NUMA ids, non-zero link widths).  check() returns a list of
(rule, message) pairs; an empty list means NCCL will read the file as meant.
"""

from __future__ import annotations

import re

MAX_VALUE = 254
MAX_ATTRIBUTES = 16
MAX_CHILDREN = 32
# NCCL stops at 256 nodes including the ones it adds itself; keep headroom.
MAX_ELEMENTS = 192

CHILDREN = {
    None: {'system'},
    'system': {'cpu'},
    'cpu': {'pci', 'nic'},
    'pci': {'pci', 'gpu', 'nic', 'pcilink'},
    'gpu': {'nvlink', 'c2c'},
    'nic': {'net'},
    'net': set(), 'nvlink': set(), 'c2c': set(), 'pcilink': set(),
}
LINK_SPEEDS = {'2.5 GT/s', '5 GT/s', '8 GT/s', '16 GT/s', '32 GT/s',
               '2.5 GT/s PCIe', '5.0 GT/s PCIe', '8.0 GT/s PCIe', '16.0 GT/s PCIe', '32.0 GT/s PCIe', '64.0 GT/s PCIe'}
ARCHES = {'x86_64', 'arm64', 'ppc64'}
TCLASSES = {'0x030200': 'gpu', '0x068000': 'nvswitch', '0x068001': 'cpu'}
NVSWITCH_TARGET = 'fffffff:ff:ff.0'

BUSID = re.compile(r'^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')
HEX16 = re.compile(r'^0x[0-9a-f]{4}$')
PCI_CLASS = re.compile(r'^0x[0-9a-f]{6}$')
CPUMAP = re.compile(r'^[0-9a-f]{1,8}(,[0-9a-f]{8})*$')
INTEGER = re.compile(r'^-?[0-9]+$')
NAME = re.compile(r'^[a-z][a-z0-9_]*$')
TAG_LINE = re.compile(r'^( *)<(/?)([^\s/>]*)(.*?)(/?)>$')
ATTRIBUTE = re.compile(r' ([^\s=]+)="([^"]*)"')


class Element:
    def __init__(self, tag, attributes, parent, line):
        self.tag, self.attributes, self.parent, self.line = tag, attributes, parent, line
        self.children = []


def check(text):
    """All rule violations of text as [(rule, message)]."""
    errors = []
    root = _parse(text, errors)
    if root is not None:
        _check_tree(root, errors)
    return errors


def _parse(text, errors):
    if '\t' in text:
        errors.append(('tab', 'tab character in file'))
    if '<?' in text:
        errors.append(('declaration', '<?...?> declaration or processing instruction'))
    if '&' in text:
        errors.append(('entity', 'entities are not decoded by NCCL'))
    text = re.sub(r'<!--.*?-->', lambda comment: '\n' * comment.group(0).count('\n'), text, flags=re.DOTALL)
    stack, root, count = [], None, 0
    for number, raw in enumerate(text.split('\n'), start=1):
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        if '<' not in line and '>' not in line:
            errors.append(('text', 'line %d: text content is not allowed: %r' % (number, line)))
            continue
        if line.count('<') != 1 or line.count('>') != 1:
            errors.append(('one-tag-per-line', 'line %d: exactly one complete tag per line: %r' % (number, line)))
            continue
        match = TAG_LINE.match(line.replace('\t', ' '))
        if not match:
            errors.append(('text', 'line %d: text outside a tag or malformed tag: %r' % (number, line)))
            continue
        _indent, closing, tag, rest, self_closing = match.groups()
        if closing:
            if rest.strip() or not stack or stack[-1].tag != tag:
                errors.append(('nesting', 'line %d: unexpected closing tag </%s>' % (number, tag)))
                return None
            stack.pop()
            continue
        attributes = _attributes(rest, number, errors)
        parent = stack[-1] if stack else None
        element = Element(tag, attributes, parent, number)
        count += 1
        if parent is None:
            if root is not None:
                errors.append(('single-root', 'line %d: second top-level element' % number))
            root = element
        else:
            parent.children.append(element)
        if not self_closing:
            stack.append(element)
    if stack:
        errors.append(('nesting', 'unclosed element <%s>' % stack[-1].tag))
    if count > MAX_ELEMENTS:
        errors.append(('elements', '%d elements; keep well below NCCL\'s 256 (<= %d)' % (count, MAX_ELEMENTS)))
    if root is None:
        errors.append(('single-root', 'no element'))
    return root


def _attributes(rest, number, errors):
    attributes = {}
    consumed = ''.join(match.group(0) for match in ATTRIBUTE.finditer(rest))
    if consumed != rest:
        errors.append(('attribute-syntax', 'line %d: attributes must be name="value" separated by single spaces: %r' % (number, rest)))
    for name, value in ATTRIBUTE.findall(rest):
        if name in attributes:
            errors.append(('duplicate-attribute', 'line %d: %s given twice' % (number, name)))
        if not NAME.match(name):
            errors.append(('attribute-syntax', 'line %d: attribute name %r' % (number, name)))
        if len(name) > MAX_VALUE or len(value) > MAX_VALUE:
            errors.append(('length', 'line %d: %s is longer than %d characters' % (number, name, MAX_VALUE)))
        attributes[name] = value
    if len(attributes) > MAX_ATTRIBUTES:
        errors.append(('attribute-count', 'line %d: %d attributes, NCCL keeps %d' % (number, len(attributes), MAX_ATTRIBUTES)))
    return attributes


def _walk(element):
    yield element
    for child in element.children:
        yield from _walk(child)


def _check_tree(root, errors):
    elements = list(_walk(root))
    pci_busids = {}
    for element in elements:
        parent_tag = element.parent.tag if element.parent else None
        if element.tag not in CHILDREN:
            errors.append(('unknown-element', 'line %d: NCCL ignores <%s> and its subtree' % (element.line, element.tag)))
        elif element.tag not in CHILDREN.get(parent_tag, set()):
            errors.append(('nesting', 'line %d: <%s> cannot be a child of <%s>' % (element.line, element.tag, parent_tag)))
        if len(element.children) > MAX_CHILDREN:
            errors.append(('children', 'line %d: <%s> has %d children (> %d)' % (element.line, element.tag, len(element.children), MAX_CHILDREN)))
        if element.tag == 'pci' and 'busid' in element.attributes:
            if element.attributes['busid'] in pci_busids:
                errors.append(('duplicate-busid', 'line %d: busid %s used twice' % (element.line, element.attributes['busid'])))
            pci_busids[element.attributes['busid']] = element
        checker = RULES.get(element.tag)
        if checker:
            checker(element, errors)
    gpu_busids = {element.parent.attributes.get('busid') for element in elements if element.tag == 'gpu' and element.parent is not None}
    devs = [element.attributes.get('dev') for element in elements if element.tag == 'gpu']
    if len(devs) != len(set(devs)):
        errors.append(('gpu', 'duplicate gpu dev values %s' % devs))
    for element in elements:
        if element.tag == 'nvlink' and element.attributes.get('tclass') == '0x030200' and element.attributes.get('target') not in gpu_busids:
            errors.append(('nvlink', 'line %d: GPU target %s is not a GPU of this file' % (element.line, element.attributes.get('target'))))


def _require(element, errors, name, pattern=None, choices=None):
    value = element.attributes.get(name)
    if value is None:
        errors.append(('required', 'line %d: <%s> needs %s' % (element.line, element.tag, name)))
        return None
    if (pattern is not None and not pattern.match(value)) or (choices is not None and value not in choices):
        errors.append(('value', 'line %d: <%s %s="%s"> is not valid' % (element.line, element.tag, name, value)))
        return None
    return value


def _system(element, errors):
    _require(element, errors, 'version', choices={'1'})


def _cpu(element, errors):
    numaid = _require(element, errors, 'numaid', INTEGER)
    if numaid is not None and int(numaid) < 0:
        errors.append(('value', 'line %d: numaid %s: NCCL then reads node%s/cpumap and fails' % (element.line, numaid, numaid)))
    _require(element, errors, 'affinity', CPUMAP)
    arch = _require(element, errors, 'arch', choices=ARCHES)
    if arch == 'x86_64':
        vendor = _require(element, errors, 'vendor', choices={'GenuineIntel', 'AuthenticAMD', 'CentaurHauls', 'Shanghai'})
        if vendor == 'GenuineIntel':
            _require(element, errors, 'familyid', INTEGER)
            _require(element, errors, 'modelid', INTEGER)


def _pci(element, errors):
    _require(element, errors, 'busid', BUSID)
    pci_class = _require(element, errors, 'class', PCI_CLASS)
    _require(element, errors, 'link_speed', choices=LINK_SPEEDS)
    width = _require(element, errors, 'link_width', INTEGER)
    if width is not None and int(width) not in (1, 2, 4, 8, 16, 32):
        errors.append(('value', 'line %d: link_width %s' % (element.line, width)))
    for name in ('vendor', 'device', 'subsystem_vendor', 'subsystem_device'):
        if name in element.attributes:
            _require(element, errors, name, HEX16)
    tags = {child.tag for child in element.children}
    expected = '0x03' if 'gpu' in tags else '0x02' if 'nic' in tags else '0x0604' if 'pci' in tags else None
    if pci_class and expected and not pci_class.startswith(expected):
        errors.append(('value', 'line %d: class %s does not fit a %s' % (element.line, pci_class, '/'.join(sorted(tags)))))
    if len([child for child in element.children if child.tag in ('gpu', 'nic')]) > 1:
        errors.append(('nesting', 'line %d: one gpu or nic per pci function' % element.line))


def _gpu(element, errors):
    _require(element, errors, 'dev', re.compile(r'^[0-9]+$'))
    sm = _require(element, errors, 'sm', re.compile(r'^[1-9][0-9]+$'))
    if sm is not None and not 30 <= int(sm) <= 200:
        errors.append(('value', 'line %d: sm %s is not compute capability x10' % (element.line, sm)))


def _nvlink(element, errors):
    tclass = _require(element, errors, 'tclass', choices=TCLASSES)
    target = _require(element, errors, 'target')
    count = _require(element, errors, 'count', re.compile(r'^[1-9][0-9]*$'))
    if target is not None and tclass == '0x068000' and target != NVSWITCH_TARGET and not BUSID.match(target):
        errors.append(('value', 'line %d: NVSwitch target %s' % (element.line, target)))
    if target is not None and tclass == '0x030200' and not BUSID.match(target):
        errors.append(('value', 'line %d: GPU target %s is not a busid' % (element.line, target)))
    if count is not None and int(count) > 36:
        errors.append(('value', 'line %d: %s NVLinks is more than any GPU has' % (element.line, count)))


def _net(element, errors):
    _require(element, errors, 'name')
    if 'speed' in element.attributes:
        _require(element, errors, 'speed', re.compile(r'^[1-9][0-9]*$'))


RULES = {'system': _system, 'cpu': _cpu, 'pci': _pci, 'gpu': _gpu, 'nvlink': _nvlink, 'net': _net}


def assert_valid(text):
    errors = check(text)
    if errors:
        raise AssertionError('NCCL would not read this topology as meant:\n' + '\n'.join('%s: %s' % pair for pair in errors))
