// Storage dtypes (compute is always f32) and host-side conversions.
#pragma once
#include <HalideRuntime.h>
#include <cstdint>
#include <cstring>
#include <string>

namespace blockfuse {

enum class DType { f32, f16, bf16 };

inline const char *dtype_name(DType t) {
    switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    }
    return "?";
}
// Returns false for anything but f32/f16/bf16.
bool parse_dtype(const std::string &s, DType *out);
inline int dtype_bytes(DType t) { return t == DType::f32 ? 4 : 2; }
halide_type_t halide_type_of(DType t);
// Unit roundoff of the storage format (2^-24, 2^-11, 2^-8).
double dtype_unit_roundoff(DType t);

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);  // round to nearest even
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);  // round to nearest even

// Element i of raw storage of type t, as double; and the reverse (rounded to t).
double load_as_double(const void *data, DType t, size_t i);
void store_from_double(void *data, DType t, size_t i, double v);
// Quiet NaN in type t (used to poison outputs).
void store_nan(void *data, DType t, size_t i);

}  // namespace blockfuse
