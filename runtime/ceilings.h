// The device's ceilings, measured at the start of a run: device-to-device copy bandwidth
// (bytes read + written) and the CUDA-core FMA rates (FFMA fp32, HFMA2 fp16).
#pragma once

namespace blockfuse {

struct Ceilings {
    double copy_gbps = 0;
    double ffma_f32_tflops = 0;
    double hfma2_f16_tflops = 0;
    bool measured = false;
};

// Requires a CUDA device; each figure is the median of 10 event-timed runs.
Ceilings measure_ceilings();

}  // namespace blockfuse
