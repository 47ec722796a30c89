#!/usr/bin/python
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: debian_source
short_description: Authenticate a Debian source package through the archive's signed metadata
description:
  - Checks a suite's C(InRelease) with C(gpgv) against the Debian archive keyring, reads from its signed text the
    SHA-256 of the component's C(Sources.xz), and, given that file, checks it and returns the pool directory and the
    SHA-256 of every file of one source package version (its C(.dsc), orig and debian tarballs).
  - This is the chain of trust C(apt-get source) follows. A tampered C(InRelease), an index that is not the one the
    release lists, a file name with a directory part or of another package, and a version the index does not hold
    are refused with the reason.
  - It reads files and changes nothing; the role C(trainstack.cluster.build_artifact) runs it on the controller.
extends_documentation_fragment:
  - trainstack.cluster.attributes
attributes:
  check_mode:
    support: full
    details: It changes nothing and runs the same in check mode.
  diff_mode:
    support: none
options:
  release:
    description: The downloaded C(InRelease) file of the suite (clearsigned).
    type: path
    required: true
  keyring:
    description: The keyring of the archive keys C(gpgv) checks the signature against.
    type: path
    default: /usr/share/keyrings/debian-archive-keyring.gpg
  component:
    description: The archive component of the package.
    type: str
    default: main
  sources:
    description:
      - The downloaded C(Sources.xz) (or C(.gz), or plain C(Sources)) of the component. Without it the module only
        checks the release and returns RV(index_sha256) for the download.
    type: path
  package:
    description: The source package (with O(sources)).
    type: str
  version:
    description: The Debian version of the source package, such as C(1.13.1-1) (with O(sources)).
    type: str
  gpgv:
    description: The C(gpgv) program.
    type: str
    default: gpgv
author:
  - trainstack.cluster developers (@trainstack)
"""

EXAMPLES = r"""
- name: Check the suite's signed release (controller side)
  trainstack.cluster.debian_source:
    release: /var/cache/trainstack/sources/bookworm-InRelease
  delegate_to: localhost
  register: __release

- name: Read the files of ucx 1.13.1-1 from the index the release lists
  trainstack.cluster.debian_source:
    release: /var/cache/trainstack/sources/bookworm-InRelease
    sources: "/var/cache/trainstack/sources/Sources-{{ __release.index_sha256 }}.xz"
    package: ucx
    version: 1.13.1-1
  delegate_to: localhost
  register: __ucx_source
"""

RETURN = r"""
codename:
  description: The suite's codename (C(bookworm)), from the signed text.
  returned: always
  type: str
index_path:
  description: The index's path in the suite (C(main/source/Sources.xz)).
  returned: always
  type: str
index_sha256:
  description: The index's SHA-256 as the signed release lists it (the archive serves it under C(by-hash/SHA256/)).
  returned: always
  type: str
signature:
  description: What C(gpgv) said of the signature.
  returned: always
  type: list
  elements: str
directory:
  description: The package's pool directory (C(pool/main/u/ucx)), from the signed index.
  returned: with O(sources)
  type: str
files:
  description: C(name), C(sha256) and C(size) of each file of the source package, from the signed index.
  returned: with O(sources)
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.trainstack.cluster.plugins.module_utils._debian_archive import (
    ArchiveError, decompress, release_codename, release_index, sha256_hex, sources_entry)


def main():
    module = AnsibleModule(
        argument_spec={
            'release': {'type': 'path', 'required': True},
            'keyring': {'type': 'path', 'default': '/usr/share/keyrings/debian-archive-keyring.gpg'},
            'component': {'type': 'str', 'default': 'main'},
            'sources': {'type': 'path'},
            'package': {'type': 'str'},
            'version': {'type': 'str'},
            'gpgv': {'type': 'str', 'default': 'gpgv'},
        },
        required_by={'sources': ('package', 'version')},
        supports_check_mode=True,
    )
    params = module.params
    gpgv = module.get_bin_path(params['gpgv'], required=True)
    # --output - prints the signed text only: what is read below is exactly what the archive keys signed.
    rc, signed, said = module.run_command([gpgv, '--keyring', params['keyring'], '--output', '-', params['release']])
    signature = [line for line in said.splitlines() if line.strip()]
    if rc != 0:
        module.fail_json(msg='%s is not signed by a key of %s (gpgv exit %d): %s'
                         % (params['release'], params['keyring'], rc, ' | '.join(signature[-4:])), signature=signature)
    index_path = '%s/source/Sources.xz' % params['component']
    result = {'changed': False, 'signature': signature, 'codename': release_codename(signed), 'index_path': index_path}
    try:
        result['index_sha256'], size = release_index(signed, index_path)
        if params['sources']:
            with open(params['sources'], 'rb') as handle:
                data = handle.read()
            if sha256_hex(data) != result['index_sha256'] or len(data) != size:
                module.fail_json(msg='%s is not the %s the signed release lists (SHA-256 %s, %d bytes; the file has %s, %d bytes)'
                                 % (params['sources'], index_path, result['index_sha256'], size, sha256_hex(data), len(data)))
            result.update(sources_entry(decompress(data, params['sources']), params['package'], params['version']))
    except ArchiveError as exc:
        module.fail_json(msg=str(exc), **result)
    except (OSError, ValueError, EOFError) as exc:
        module.fail_json(msg='cannot read %s: %s' % (params['sources'], exc), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
