#!/usr/bin/env bash
# Installs tessera's build and test dependencies from Debian 12 packages (run as root).
# python3-torch / python3-torchvision: the tests export stock PyTorch models to ONNX (offline).
set -euo pipefail
pkgs=(build-essential cmake pkg-config libsystemc-dev libboost-graph-dev libfmt-dev
      nlohmann-json3-dev catch2 libcli11-dev libeigen3-dev libabsl-dev
      zlib1g-dev libonnx-dev libprotobuf-dev protobuf-compiler python3-onnx python3-numpy python3-matplotlib
      python3-torch python3-torchvision libmuparser-dev libyaml-cpp-dev
      slurmctld slurmd slurm-client munge)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
