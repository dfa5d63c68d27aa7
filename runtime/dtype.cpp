#include "runtime/dtype.h"
#include <cmath>
#include <limits>

namespace blockfuse {

bool parse_dtype(const std::string &s, DType *out) {
    if (s == "f32") *out = DType::f32;
    else if (s == "f16") *out = DType::f16;
    else if (s == "bf16") *out = DType::bf16;
    else return false;
    return true;
}

halide_type_t halide_type_of(DType t) {
    switch (t) {
    case DType::f32: return halide_type_t(halide_type_float, 32);
    case DType::f16: return halide_type_t(halide_type_float, 16);
    case DType::bf16: return halide_type_t(halide_type_bfloat, 16);
    }
    return halide_type_t(halide_type_float, 32);
}

double dtype_unit_roundoff(DType t) {
    switch (t) {
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
    }
    return 0;
}

float f16_to_f32(uint16_t h) {
    uint32_t sign = uint32_t(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: renormalize
            int e = -1;
            do {
                mant <<= 1;
                ++e;
            } while (!(mant & 0x400));
            bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | mant << 13;
    } else {
        bits = sign | (exp + 112) << 23 | mant << 13;
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint16_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);  // inf / nan
    if (ax >= 0x477ff000u) return sign | 0x7c00;                                   // rounds to >= 65520: inf
    if (ax < 0x38800000u) {  // below the smallest normal f16: subnormal or zero
        float a;
        std::memcpy(&a, &ax, 4);
        // scale so that one f16 subnormal ulp (2^-24) is 1.0, round to nearest even
        float scaled = a * 16777216.0f;
        return sign | uint16_t(std::nearbyint(scaled));
    }
    uint32_t mant = ax & 0x7fffff, exp = (ax >> 23) - 112;
    uint32_t h = exp << 10 | mant >> 13, rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carries into exponent correctly
    return sign | uint16_t(h);
}

float bf16_to_f32(uint16_t h) {
    uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // keep NaN a NaN
    uint32_t rounding = 0x7fff + ((x >> 16) & 1);
    return uint16_t((x + rounding) >> 16);
}

double load_as_double(const void *data, DType t, size_t i) {
    switch (t) {
    case DType::f32: return static_cast<const float *>(data)[i];
    case DType::f16: return f16_to_f32(static_cast<const uint16_t *>(data)[i]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t *>(data)[i]);
    }
    return 0;
}

void store_from_double(void *data, DType t, size_t i, double v) {
    switch (t) {
    case DType::f32: static_cast<float *>(data)[i] = float(v); break;
    case DType::f16: static_cast<uint16_t *>(data)[i] = f32_to_f16(float(v)); break;
    case DType::bf16: static_cast<uint16_t *>(data)[i] = f32_to_bf16(float(v)); break;
    }
}

void store_nan(void *data, DType t, size_t i) {
    store_from_double(data, t, i, std::numeric_limits<double>::quiet_NaN());
}

}  // namespace blockfuse
