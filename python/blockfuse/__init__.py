"""blockfuse from Python.

- ``blockfuse.torch``: PyTorch custom ops (conv2d and the fused block families) and ``optimize(model,
  example_input)``, which swaps torchvision blocks for blockfuse modules (needs torch).
- ``blockfuse.fold``, ``blockfuse.match``, ``blockfuse.models``: BatchNorm / LayerNorm / layer-scale
  folding in float64 numpy, the module matcher, and the three validated torchvision architectures as data
  (no torch needed).
- ``python -m blockfuse.prebuild --model mobilenet_v2 --batch 1,8,128``: the workload keys a model needs,
  for ``./run cache fill`` on the machine with Halide.
"""
from blockfuse._lib import BlockfuseError, BadInput, KernelUnavailable, Kernel, canonical, info, library_path

__all__ = ["BlockfuseError", "BadInput", "KernelUnavailable", "Kernel", "canonical", "info", "library_path"]
