#!/usr/bin/env bash
# Copyright (c) 2026, trainstack.cluster developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Builds a STAND-IN for one of NVIDIA's apt repositories (flat, signed, laid out like NVIDIA's) for
# molecule/gpu_stack. NVIDIA's servers are not reachable from CI, so the roles' code for them (what is
# under test) runs against these. KIND picks which:
#   cuda     NVIDIA's CUDA network repository (like
#            https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/), for the cuda_repo
#            source of nvidia_driver and nccl; the key as <last 8 hex digits of its fingerprint>.pub, as
#            NVIDIA publishes its key (3bf863cc.pub).
#   doca     NVIDIA's DOCA-Host repository, one DOCA release (like
#            https://linux.mellanox.com/public/repo/doca/3.2.1/debian12/x86_64/), for rdma_source doca_repo;
#            the key as GPG-KEY-Mellanox.pub at KEY_OUT (the repository's root, above the releases).
#   gdrcopy  gdrcopy's packages (NVIDIA ships them as plain .deb files under compute/redist/gdrcopy/) in an
#            unsigned flat repository, as playbooks/mirror.yml would index them in a local mirror.
#
# The packages carry NVIDIA's names and version scheme but hold no NVIDIA software: a README, and for
# the programs the roles touch (nvidia-smi, the nvidia-persistenced and nvidia-fabricmanager units)
# stubs that fail like the real ones do without a GPU. Several versions of each show that the roles'
# pins pick the wanted one, not the newest: 570.x, 580.82.07 (older), 580.95.05 (wanted) and
# 580.105.08 (newer, the one an unpinned install would take); NCCL 2.26.2 for CUDA 12.8 (wanted) and
# 12.9, and a newer 2.27.7. DOCA: DOCA-OFED 3.2.1 (both profiles: doca-ofed and doca-ofed-userspace) with
# NVIDIA's builds of rdma-core, the verbs libraries and perftest at versions of its scheme (<YYMM>mlnx<N>),
# higher than Debian's, each meta-package pinning them exactly; build numbers are made up. gdrcopy: 2.5.1
# (wanted) and a newer 2.6.
#
#   stand-in-nvidia-repo.sh REPO_DIR SECRET_KEY_FILE [KIND [KEY_OUT]]
#
# REPO_DIR gets the .deb files, Packages(.gz) and (cuda, doca) Release, InRelease and Release.gpg signed
# with the throw-away key in SECRET_KEY_FILE.
set -euo pipefail

repo=$1
key=$2
kind=${3:-cuda}
key_out=${4:-}
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'gpgconf --kill gpg-agent >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
export GNUPGHOME=$work/gnupg
mkdir -m 0700 "$GNUPGHOME"
gpg --batch --quiet --import "$key"
fpr=$(gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "fpr" { print $10; exit }')

mkdir -p "$repo"
rm -f "$repo"/*.deb "$repo"/Packages* "$repo"/Release* "$repo"/InRelease "$repo"/*.pub

# package NAME VERSION [DEPENDS]: a stand-in package with NVIDIA's name and version.
package() {
  local name=$1 version=$2 depends=${3:-} root
  root=$work/$name-$version
  mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$name"
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: trainstack.cluster molecule <gpu-stack-molecule@trainstack.invalid>"
    [ -z "$depends" ] || echo "Depends: $depends"
    echo "Section: non-free/libs"
    echo "Priority: optional"
    echo "Description: stand-in for NVIDIA's $name (molecule test package)"
    echo " Carries the name and version of NVIDIA's package for molecule/gpu_stack; holds no NVIDIA software."
  } >"$root/DEBIAN/control"
  echo "Stand-in for NVIDIA's $name $version, built by molecule/gpu_stack/files/stand-in-nvidia-repo.sh." \
    >"$root/usr/share/doc/$name/README.stand-in"
  case $name in
    nvidia-smi)
      stub "$root/usr/bin/nvidia-smi" 9 \
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
      ;;
    nvidia-persistenced)
      stub "$root/usr/bin/nvidia-persistenced" 1 "nvidia-persistenced failed to initialize. Check syslog for more details."
      unit "$root" nvidia-persistenced "NVIDIA Persistence Daemon" /usr/bin/nvidia-persistenced
      ;;
    nvidia-fabricmanager-*)
      stub "$root/usr/bin/nv-fabricmanager" 1 "Fabric Manager stand-in: no NVSwitch found."
      unit "$root" nvidia-fabricmanager "NVIDIA fabric manager service" /usr/bin/nv-fabricmanager
      ;;
  esac
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$repo/${name}_${version}_${arch}.deb" >/dev/null
}

# stub PATH EXIT_CODE MESSAGE: a program that fails as the real one does on a host without a GPU.
stub() {
  mkdir -p "$(dirname "$1")"
  printf '#!/bin/sh\n# molecule/gpu_stack stand-in, not NVIDIA'"'"'s program.\necho "%s"\nexit %s\n' "$3" "$2" >"$1"
  chmod 0755 "$1"
}

# unit ROOT NAME DESCRIPTION EXEC: the systemd unit the real package ships (the role enables it; a
# container never starts it, and the stub would fail if it did).
unit() {
  mkdir -p "$1/usr/lib/systemd/system"
  printf '[Unit]\nDescription=%s (molecule stand-in)\n\n[Service]\nExecStart=%s\n\n[Install]\nWantedBy=multi-user.target\n' \
    "$3" "$4" >"$1/usr/lib/systemd/system/$2.service"
}

case $kind in
  cuda)
    for version in 570.195.03-1 580.82.07-1 580.95.05-1 580.105.08-1; do
      package libnvidia-ml1 "$version"
      package libcuda1 "$version"
      package nvidia-smi "$version" "libnvidia-ml1 (= $version)"
      package nvidia-persistenced "$version"
    done
    for version in 580.82.07-1 580.95.05-1 580.105.08-1; do
      package nvidia-fabricmanager-580 "$version"
    done
    for version in 2.26.2-1+cuda12.8 2.26.2-1+cuda12.9 2.27.7-1+cuda12.9; do
      package libnccl2 "$version"
      package libnccl-dev "$version" "libnccl2 (= $version)"
    done
    ;;
  doca)
    doca=3.2.1-044000 rdma=2510mlnx61-1.2510044 perftest=25.10.0-0.128.g7b1f5d3.2510044
    kernel=25.10.OFED.25.10.1.7.1-1
    for name in rdma-core libibverbs1 librdmacm1 ibverbs-providers ibverbs-utils infiniband-diags; do
      package "$name" "$rdma"
    done
    package perftest "$perftest"
    package mlnx-ofed-kernel-dkms "$kernel"
    userspace="rdma-core (= $rdma), libibverbs1 (= $rdma), librdmacm1 (= $rdma), ibverbs-providers (= $rdma)"
    userspace="$userspace, ibverbs-utils (= $rdma), infiniband-diags (= $rdma), perftest (= $perftest)"
    package doca-ofed-userspace "$doca" "$userspace"
    package doca-ofed "$doca" "doca-ofed-userspace (= $doca), mlnx-ofed-kernel-dkms (= $kernel)"
    ;;
  gdrcopy)
    for version in 2.5.1-1 2.6-1; do
      package libgdrapi "$version"
      package gdrdrv-dkms "$version"
    done
    ;;
esac

cd "$repo"
apt-ftparchive packages . >Packages
gzip -9nkf Packages
debs=(./*.deb)
if [ "$kind" = gdrcopy ]; then
  echo "$repo: ${#debs[@]} packages, unsigned"
  exit 0
fi
origin="NVIDIA" label="NVIDIA CUDA (molecule stand-in)"
[ "$kind" = cuda ] || label="NVIDIA DOCA-Host (molecule stand-in)"
apt-ftparchive \
  -o APT::FTPArchive::Release::Origin="$origin" \
  -o APT::FTPArchive::Release::Label="$label" \
  -o APT::FTPArchive::Release::Architectures="$arch" \
  release . >"$work/Release"
mv "$work/Release" Release
gpg --batch --yes --clearsign --output InRelease Release
gpg --batch --yes --armor --detach-sign --output Release.gpg Release
if [ "$kind" = cuda ]; then
  key_file=$(echo "${fpr: -8}" | tr '[:upper:]' '[:lower:]').pub
else
  key_file=$key_out
  mkdir -p "$(dirname "$key_file")"
fi
gpg --batch --armor --export "$fpr" >"$key_file"
echo "$repo: ${#debs[@]} packages, key $fpr ($key_file)"
