# Sourced by every bench/h200_*.sh script (run from the repository root on a GPU host):
#   bin  the carried binaries, unpacked from .carry/bin.tar.gz on first use (tools/prepare-carry.sh)
#   san  compute-sanitizer, ncu  Nsight Compute (empty where the host has none)
# and unbuffered Python output, so a log cut off by a time limit still shows how far it got.
bin=.carry
[ -x $bin/blockfuse ] || tar -xzf $bin/bin.tar.gz -C $bin
san=$(command -v compute-sanitizer || ls /opt/nvidia/*/compute-sanitizer/compute-sanitizer \
      /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
export PYTHONUNBUFFERED=1
