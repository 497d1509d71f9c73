#include "_torch_flops.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace profkit_torch {

namespace {

using Inputs = c10::ArrayRef<const c10::IValue>;

// The sizes of input `i` when it is a tensor with sizes to read
// (has_plain_sizes: not counted while torch.compile traces).
bool sizes_of(Inputs inputs, size_t i, c10::IntArrayRef* out) {
  if (i >= inputs.size() || !inputs[i].isTensor()) return false;
  const at::Tensor& t = inputs[i].toTensor();
  if (!has_plain_sizes(t)) return false;
  *out = t.sizes();
  return true;
}

// a [.., M, K] times b [.., K, N] over `batch` leading dimensions (0 or 1).
int64_t matmul_flops(Inputs inputs, size_t first, size_t batch) {
  c10::IntArrayRef a;
  c10::IntArrayRef b;
  if (!sizes_of(inputs, first, &a) || !sizes_of(inputs, first + 1, &b)) return -1;
  if (a.size() != 2 + batch || b.size() != 2 + batch) return -1;
  int64_t flops = 2 * a[batch] * a[batch + 1] * b[batch + 1];
  if (batch == 1) flops *= a[0];
  return flops;
}

// Element `d` of an int list that torch expands from one value ("stride=2").
bool list_value(const c10::IValue& value, size_t d, int64_t fallback, int64_t* out) {
  if (value.isNone()) {
    *out = fallback;
    return true;
  }
  if (value.isInt()) {
    *out = value.toInt();
    return true;
  }
  if (!value.isIntList()) return false;
  const auto list = value.toIntList();
  if (list.empty()) return false;
  *out = list.size() == 1 ? list.get(0) : (d < list.size() ? list.get(d) : -1);
  return *out >= 0;
}

// convNd(input, weight, bias, stride, padding, dilation, groups).
int64_t convolution_flops(Inputs inputs, size_t spatial) {
  c10::IntArrayRef input;
  c10::IntArrayRef weight;
  if (!sizes_of(inputs, 0, &input) || !sizes_of(inputs, 1, &weight)) return -1;
  if (weight.size() != spatial + 2) return -1;
  const bool batched = input.size() == spatial + 2;
  if (!batched && input.size() != spatial + 1) return -1;
  if (inputs.size() < 6) return -1;
  const c10::IValue& stride = inputs[3];
  const c10::IValue& padding = inputs[4];
  const c10::IValue& dilation = inputs[5];
  std::string_view padding_mode;
  if (padding.isString()) padding_mode = padding.toStringRef();
  int64_t flops = 2 * (batched ? input[0] : 1) * weight[0];
  for (size_t i = 1; i < weight.size(); ++i) flops *= weight[i];  // C_in / groups and the kernel
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t in = input[input.size() - spatial + d];
    int64_t out = 0;
    if (padding_mode == "same") {
      out = in;
    } else {
      int64_t s = 0;
      int64_t p = 0;
      int64_t dil = 0;
      if (!list_value(stride, d, 1, &s) || !list_value(dilation, d, 1, &dil) || s <= 0) return -1;
      if (padding_mode != "valid" && !list_value(padding, d, 0, &p)) return -1;
      const int64_t span = dil * (weight[2 + d] - 1) + 1;
      out = in + 2 * p < span ? 0 : (in + 2 * p - span) / s + 1;
    }
    flops *= out;
  }
  return flops;
}

int64_t elements(c10::IntArrayRef sizes) {
  int64_t n = 1;
  for (const int64_t d : sizes) n *= d;
  return n;
}

// The elements of the broadcast result of the tensor inputs among the first two.
int64_t elementwise_flops(Inputs inputs) {
  c10::IntArrayRef a;
  c10::IntArrayRef b;
  const bool has_a = sizes_of(inputs, 0, &a);
  const bool has_b = sizes_of(inputs, 1, &b);
  if (!has_a && !has_b) return -1;
  if (!has_b) return elements(a);
  if (!has_a) return elements(b);
  const size_t rank = std::max(a.size(), b.size());
  int64_t n = 1;
  for (size_t d = 0; d < rank; ++d) {  // from the last dimension
    const int64_t x = d < a.size() ? a[a.size() - 1 - d] : 1;
    const int64_t y = d < b.size() ? b[b.size() - 1 - d] : 1;
    n *= x == 1 ? y : x;
  }
  return n;
}

int64_t flops_of(std::string_view name, Inputs inputs) {
  if (name.substr(0, 6) != "aten::") return -1;
  name.remove_prefix(6);
  if (name == "mm") return matmul_flops(inputs, 0, 0);
  if (name == "addmm") return matmul_flops(inputs, 1, 0);
  if (name == "bmm") return matmul_flops(inputs, 0, 1);
  if (name == "baddbmm") return matmul_flops(inputs, 1, 1);
  if (name == "conv1d") return convolution_flops(inputs, 1);
  if (name == "conv2d") return convolution_flops(inputs, 2);
  if (name == "conv3d") return convolution_flops(inputs, 3);
  if (name == "mul" || name == "add") return elementwise_flops(inputs);
  return -1;
}

}  // namespace

int64_t operator_flops(const at::RecordFunction& fn) noexcept {
  try {
    const char* name = fn.name();
    return name == nullptr ? -1 : flops_of(name, fn.inputs());
  } catch (...) {  // an IValue of an unexpected kind: no count rather than an exception into torch
    return -1;
  }
}

}  // namespace profkit_torch
