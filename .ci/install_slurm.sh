#!/usr/bin/env bash
# CI: install the packages of a one-node SLURM (slurm-wlm, munge) so that tests/workflow/test_slurm.py
# runs instead of skipping; the test writes the config and starts the daemons itself.
# Idempotent. Without root or apt-get it installs nothing and says why (the test then skips).
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

if command -v munged >/dev/null && command -v slurmctld >/dev/null \
        && command -v slurmd >/dev/null && command -v sbatch >/dev/null; then
    echo "install_slurm: slurm-wlm and munge already installed"
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "install_slurm: not root or no apt-get; tests/workflow/test_slurm.py will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q slurm-wlm munge
