// FLOPs of an operator call, for with_flops: what torch.profiler's with_flops
// counts, computed from the call's inputs as its start callback sees them
// (RecordFunction's inputs are only valid there).
//
// Counted operators and formulas (a multiply-add is two FLOPs):
//   aten::mm, aten::addmm            2 * M * K * N
//   aten::bmm, aten::baddbmm         2 * B * M * K * N
//   aten::conv1d / conv2d / conv3d   2 * N * C_out * (output positions) * (C_in / groups) * (kernel size),
//                                    the output positions from the input's size, stride, padding
//                                    ("same", "valid" or numbers) and dilation
//   aten::mul, aten::add             the elements of the broadcast result
// torch.profiler counts the same operators (conv2d alone of the convolutions)
// with the same formulas, except that for mul and add it counts the first
// input's elements. Operators that these are built from (aten::linear's
// addmm, aten::matmul's mm, conv2d's convolution) are counted where the
// formula applies, once: a composite is not counted again.
//
// Thread-safety: pure functions of their argument. Never throws.
#pragma once

#include <ATen/record_function.h>

#include <cstdint>

namespace profkit_torch {

// The FLOPs of the call `fn` is starting, or -1 when its operator has no
// formula here or its inputs are not what the formula needs.
int64_t operator_flops(const at::RecordFunction& fn) noexcept;

// Whether `t`'s sizes can be read as they are, as torch.profiler reads them
// (its InputOutputEncoder's test): not for a nested tensor, which has none
// (sizes() throws), nor for one with symbolic sizes (torch.compile's fake
// tensors while it traces): reading those fixes them to their current
// values, and the compiled code then recompiles for every new shape.
inline bool has_plain_sizes(const at::Tensor& t) {
  return t.defined() && !t.is_nested() && !t.unsafeGetTensorImpl()->has_symbolic_sizes_strides();
}

}  // namespace profkit_torch
