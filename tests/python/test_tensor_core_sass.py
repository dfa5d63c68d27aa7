#!/usr/bin/env python3
"""Self-check of tests/kernels/tensor_core_sass.py's PTX store check on small PTX excerpts: the trap it guards
against (f32 registers stored as f16 lanes with no conversion, as Halide 21's CUDA backend emits a two-lane native
f16 cast) fails; converted pairs, %rs stores and the integer rounding's stores pass. Run: python3 THIS."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels"))
import tensor_core_sass as tcs  # noqa: E402

TRAP = """
	max.f32 	%r5, %r3, 0f00000000;
	@%p1 fma.rn.f32 	%r6, %r1, %r2, %r5;
	st.global.v2.b16 	[%rd4], {%r5, %r6};
"""
CONVERTED = """
	max.f32 	%r5, %r3, 0f00000000;
	max.f32 	%r6, %r4, 0f00000000;
	cvt.rn.f16x2.f32 	%r7, %r6, %r5;
	st.shared.v4.b32 	[%rd6+16], {%r7, %r7, %r7, %r7};
	cvt.rn.f16.f32 	%rs1, %r5;
	st.shared.v2.b16 	[%rd7], {%rs1, %rs1};
"""
INTEGER = """
	add.s32 	%r9, %r8, 4095;
	shr.u32 	%r10, %r9, 13;
	st.global.b16 	[%rd6], %r10;
"""
# A register first written as f32, then rewritten by an integer instruction before the store: its last writer counts.
REWRITTEN = """
	fma.rn.f32 	%r11, %r1, %r2, %r3;
	and.b32 	%r11, %r11, 65535;
	st.global.b16 	[%rd6], %r11;
"""


class StoreCheck(unittest.TestCase):
    def test_trap_found(self):
        bad = tcs.f32_stored_as_16_bits(TRAP)
        self.assertEqual(len(bad), 2, bad)
        self.assertIn("%r5 from max.f32", bad[0])
        self.assertIn("%r6 from fma.rn.f32", bad[1])

    def test_converted_and_integer_pass(self):
        for ptx in (CONVERTED, INTEGER, REWRITTEN):
            self.assertEqual(tcs.f32_stored_as_16_bits(ptx), [], ptx)


if __name__ == "__main__":
    unittest.main(verbosity=2)
