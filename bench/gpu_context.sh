#!/usr/bin/env bash
# Prints the GPU context a result needs: name, driver, clocks, memory, and the toolchain.
nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,power.limit,temperature.gpu,memory.total,persistence_mode,compute_mode --format=csv 2>&1
nvidia-smi 2>&1 | head -15
echo "host: $(uname -r) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1
