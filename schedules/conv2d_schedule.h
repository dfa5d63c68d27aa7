// Hand-written schedules for the conv2d family. Schedules only: they never redefine the
// algorithm (generators/conv2d_algorithm.h); they take its Funcs and a knob struct, whose knobs
// are declared once in schedules/conv2d_knobs.h (the tuner searches that declaration, the launch
// checker derives resources from it).
#pragma once
#include "Halide.h"
#include "generators/activation.h"
#include "generators/conv2d_algorithm.h"
#include "schedules/conv2d_knobs.h"
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

// out_channels: K (vectors along K are used where K is a multiple of vec_k).
// activation_id: the kernel's runtime activation argument, specialized on none and relu;
// leave undefined when the activation is static.
void schedule_conv2d_gpu(const Conv2dFuncs &f, ConvKind kind, const Conv2dGpuKnobs &knobs, bool static_kernel,
                         const Halide::Expr &out_channels, const Halide::Expr &activation_id = Halide::Expr());
void schedule_conv2d_cpu(const Conv2dFuncs &f, ConvKind kind, const Conv2dCpuKnobs &knobs, bool static_kernel,
                         const Halide::Expr &out_channels, const Halide::Expr &activation_id = Halide::Expr());

}  // namespace blockfuse
