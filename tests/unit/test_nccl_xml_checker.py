# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The strict checker rejects every broken NCCL parser rule (and accepts the goldens)."""

from __future__ import annotations

import os

import pytest

import nccl_xml_checker
from topology_support import GPU_CASES, NCCL_XML_GOLDEN

VALID = """<system version="1">
  <!-- comments are allowed -->
  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="207">
    <pci busid="0000:00:06.0" class="0x030200" vendor="0x10de" device="0x2335" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90">
        <nvlink target="0000:00:07.0" count="18" tclass="0x030200"/>
      </gpu>
    </pci>
    <pci busid="0000:00:07.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="90">
        <nvlink target="fffffff:ff:ff.0" count="18" tclass="0x068000"/>
      </gpu>
    </pci>
    <pci busid="0000:16:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:19:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">
        <nic>
          <net name="mlx5_0" speed="400000"/>
        </nic>
      </pci>
    </pci>
  </cpu>
</system>
"""

GPU0 = '      <gpu dev="0" sm="90">'
CPU = '  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="207">'
PCI0 = '    <pci busid="0000:00:06.0" class="0x030200" vendor="0x10de" device="0x2335" link_speed="32.0 GT/s PCIe" link_width="16">'


def many(tag, count):
    return '\n'.join('        <%s/>' % tag for _index in range(count))


BROKEN = [
    ('declaration', lambda text: '<?xml version="1.0"?>\n' + text),
    ('tab', lambda text: text.replace('  <cpu', '\t<cpu')),
    ('one-tag-per-line', lambda text: text.replace(GPU0 + '\n        ', GPU0)),
    ('one-tag-per-line', lambda text: text.replace(' link_speed="32.0 GT/s PCIe" link_width="16">\n      <gpu dev="0"',
                                                   '\n     link_speed="32.0 GT/s PCIe" link_width="16">\n      <gpu dev="0"')),
    ('attribute-syntax', lambda text: text.replace('dev="0"', "dev='0'")),
    ('attribute-syntax', lambda text: text.replace('dev="0" sm', 'dev="0"  sm')),
    ('attribute-syntax', lambda text: text.replace('dev="0"', 'dev=0')),
    ('entity', lambda text: text.replace('name="mlx5_0"', 'name="mlx5&amp;0"')),
    ('text', lambda text: text.replace('        <nic>', '        hello')),
    ('length', lambda text: text.replace('affinity="ffffffff"', 'affinity="%s"' % ','.join(['ffffffff'] * 29))),
    ('attribute-count', lambda text: text.replace('<net name="mlx5_0"', '<net name="mlx5_0"' + ''.join(' a%d="1"' % i for i in range(16)))),
    ('elements', lambda text: text.replace('  </cpu>', '  </cpu>' + ''.join(
        '\n  <cpu numaid="%d" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="207">\n%s\n  </cpu>' % (n + 1, many('nic', 30))
        for n in range(6)))),
    ('children', lambda text: text.replace(GPU0 + '\n', GPU0 + '\n' + '\n'.join(
        '        <nvlink target="0000:00:07.0" count="1" tclass="0x030200"/>' for _index in range(32)) + '\n')),
    ('nesting', lambda text: text.replace('  </cpu>', '    <gpu dev="2" sm="90"/>\n  </cpu>')),
    ('nesting', lambda text: text.replace('        <nic>\n          <net name="mlx5_0" speed="400000"/>\n        </nic>',
                                          '        <net name="mlx5_0" speed="400000"/>')),
    ('nesting', lambda text: text.replace('    </pci>\n  </cpu>', '  </cpu>')),
    ('unknown-element', lambda text: text.replace('  </cpu>', '  </cpu>\n  <numa id="0"/>')),
    ('required', lambda text: text.replace(' link_speed="32.0 GT/s PCIe" link_width="16">\n      <gpu dev="1"', ' link_width="16">\n      <gpu dev="1"')),
    ('required', lambda text: text.replace('numaid="0" ', '')),
    ('required', lambda text: text.replace(' affinity="ffffffff"', '')),
    ('required', lambda text: text.replace(' familyid="6"', '')),
    ('required', lambda text: text.replace(' sm="90"', '', 1)),
    ('required', lambda text: text.replace(' tclass="0x068000"', '')),
    ('required', lambda text: text.replace('<system version="1">', '<system>')),
    ('value', lambda text: text.replace('numaid="0"', 'numaid="-1"')),
    ('value', lambda text: text.replace('affinity="ffffffff"', 'affinity="0-31"')),
    ('value', lambda text: text.replace('arch="x86_64"', 'arch="amd64"')),
    ('value', lambda text: text.replace('busid="0000:16:00.0"', 'busid="0000:1A:00.0"')),
    ('value', lambda text: text.replace('busid="0000:00:07.0"', 'busid="00000000:00:07.0"')),
    ('value', lambda text: text.replace('link_speed="32.0 GT/s PCIe" link_width="16">\n      <gpu dev="1"',
                                        'link_speed="Gen5" link_width="16">\n      <gpu dev="1"')),
    ('value', lambda text: text.replace('link_width="16">\n      <gpu dev="1"', 'link_width="0">\n      <gpu dev="1"')),
    ('value', lambda text: text.replace('class="0x030200" link_speed', 'class="0x020000" link_speed')),
    ('value', lambda text: text.replace('vendor="0x10de"', 'vendor="10de"')),
    ('value', lambda text: text.replace('sm="90">\n        <nvlink target="fff', 'sm="9.0">\n        <nvlink target="fff')),
    ('value', lambda text: text.replace('tclass="0x068000"', 'tclass="0x060400"')),
    ('value', lambda text: text.replace('target="fffffff:ff:ff.0"', 'target="ffff:ff:ff"')),
    ('value', lambda text: text.replace('count="18" tclass="0x068000"', 'count="0" tclass="0x068000"')),
    ('value', lambda text: text.replace('speed="400000"', 'speed="400 Gb/s"')),
    ('value', lambda text: text.replace('<system version="1">', '<system version="2">')),
    ('duplicate-attribute', lambda text: text.replace('dev="0" sm="90"', 'dev="0" sm="90" dev="3"')),
    ('duplicate-busid', lambda text: text.replace('busid="0000:00:07.0"', 'busid="0000:00:06.0"')),
    ('single-root', lambda text: text + '<system version="1">\n</system>\n'),
    ('nvlink', lambda text: text.replace('target="0000:00:07.0"', 'target="0000:00:08.0"')),
    ('gpu', lambda text: text.replace('dev="1"', 'dev="0"')),
]


def test_reference_document_is_valid():
    assert nccl_xml_checker.check(VALID) == []


@pytest.mark.parametrize('rule, mutate', BROKEN, ids=['%02d-%s' % (number, rule) for number, (rule, _mutate) in enumerate(BROKEN)])
def test_checker_rejects_broken_rule(rule, mutate):
    broken = mutate(VALID)
    assert broken != VALID
    assert rule in [found for found, _message in nccl_xml_checker.check(broken)]


@pytest.mark.parametrize('case', GPU_CASES)
def test_goldens_pass(case):
    with open(os.path.join(NCCL_XML_GOLDEN, case + '.xml'), encoding='utf-8') as handle:
        assert nccl_xml_checker.check(handle.read()) == []
