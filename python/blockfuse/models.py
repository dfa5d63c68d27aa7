"""The three validated torchvision networks as data: per module that blockfuse.match.plan() serves, its
path, its BlockShape or ConvLayer and its input size, for an image of 224x224. This is what
`python -m blockfuse.prebuild` lists keys from on the machine with Halide, which has no torch; the test
python/tests/test_torch.py checks it against plan() on the real torchvision models wherever torch is.

The configurations are torchvision 0.26's (mobilenetv2.py inverted_residual_setting, efficientnet.py
_efficientnet_conf("efficientnet_b0"), convnext.py convnext_tiny block_setting)."""
from blockfuse.match import BlockShape, ConvLayer


def _conv(c, k, r, stride, act, groups=1, pad=None):
    p = r // 2 if pad is None else pad
    return ConvLayer(c, k, r, r, (stride, stride), (p, p, p, p), (1, 1), groups, act)


def _out(h, stride, r=3, pad=None):
    p = r // 2 if pad is None else pad
    return (h + 2 * p - r) // stride + 1


def mobilenet_v2(size=224):
    out, h = [], size
    out.append(("features.0", _conv(3, 32, 3, 2, "relu6"), h))
    h = _out(h, 2)
    cin, idx = 32, 1
    for t, c, n, s in [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                       [6, 320, 1, 1]]:
        for i in range(n):
            stride = s if i == 0 else 1
            p, hidden = f"features.{idx}", cin * t
            if stride == 1 and cin == c and t != 1:
                out.append((p, BlockShape("mbconv", c, t, 3, 1, False, "relu6"), h))
            else:
                j = 0
                if t != 1:
                    out.append((f"{p}.conv.0", _conv(cin, hidden, 1, 1, "relu6"), h))
                    j = 1
                out.append((f"{p}.conv.{j}", _conv(hidden, hidden, 3, stride, "relu6", groups=hidden), h))
                h = _out(h, stride)
                out.append((f"{p}.conv.{j + 1}", _conv(hidden, c, 1, 1, "none"), h))
            cin, idx = c, idx + 1
    out.append((f"features.{idx}", _conv(cin, 1280, 1, 1, "relu6"), h))
    return out


def efficientnet_b0(size=224):
    out, h = [], size
    out.append(("features.0", _conv(3, 32, 3, 2, "silu"), h))
    h = _out(h, 2)
    cin = 32
    setting = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
               (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
    for stage, (t, k, s, _, c, n) in enumerate(setting, start=1):
        for i in range(n):
            stride = s if i == 0 else 1
            p, hidden = f"features.{stage}.{i}", cin * t
            if stride == 1 and cin == c and t != 1:
                out.append((p, BlockShape("mbconv", c, t, k, 1, True, "silu"), h))
            else:
                j = 0
                if t != 1:
                    out.append((f"{p}.block.0", _conv(cin, hidden, 1, 1, "silu"), h))
                    j = 1
                out.append((f"{p}.block.{j}", _conv(hidden, hidden, k, stride, "silu", groups=hidden), h))
                h = _out(h, stride, k)
                # block.{j+1} is the Squeeze-Excitation, left to PyTorch
                out.append((f"{p}.block.{j + 2}", _conv(hidden, c, 1, 1, "none"), h))
            cin = c
    out.append(("features.8", _conv(cin, 1280, 1, 1, "silu"), h))
    return out


def convnext_tiny(size=224):
    out, h = [], size
    out.append(("features.0.0", _conv(3, 96, 4, 4, "none", pad=0), h))
    h = _out(h, 4, 4, 0)
    setting = [(96, 192, 3), (192, 384, 3), (384, 768, 9), (768, None, 3)]
    idx = 1
    for c, cout, n in setting:
        for i in range(n):
            out.append((f"features.{idx}.{i}", BlockShape("convnext", c, 4, 7, 1, False, "gelu_erf"), h))
        idx += 1
        if cout is not None:
            out.append((f"features.{idx}.1", _conv(c, cout, 2, 2, "none", pad=0), h))
            h = _out(h, 2, 2, 0)
            idx += 1
    return out


MODELS = {"mobilenet_v2": mobilenet_v2, "efficientnet_b0": efficientnet_b0, "convnext_tiny": convnext_tiny}


def keys(model, batches, dtype="f16", size=224):
    """Every workload key the model needs at these batch sizes, in network order, without repeats."""
    if model not in MODELS:
        raise ValueError(f"model '{model}' is not one of {', '.join(MODELS)}")
    seen, out = set(), []
    for n in batches:
        for _, shape, h in MODELS[model](size):
            k = shape.key(n, h, h, dtype)
            if k not in seen:
                seen.add(k)
                out.append(k)
    return out
