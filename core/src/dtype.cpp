#include "shardcal/dtype.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "shardcal/error.hpp"
#include "shardcal/half.hpp"

namespace shardcal {

void throw_unknown_dtype() { throw Error("internal: unknown dtype"); }

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::U8: return "u8";
  }
  return "?";
}

DType parse_dtype(std::string_view text) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == text) return t;
  throw Error("unknown dtype '" + std::string(text) +
              "': expected one of f32, f64, f16, bf16, i32, i64, u8");
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

ReduceOp parse_reduce_op(std::string_view text) {
  for (ReduceOp op : kAllReduceOps)
    if (reduce_op_name(op) == text) return op;
  throw Error("unknown reduce op '" + std::string(text) + "': expected sum, avg, max or min");
}

namespace {
template <class T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store(void* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

template <class T>
void reduce_typed(ReduceOp op, T* out, const T* in, std::size_t n) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      if constexpr (std::is_integral_v<T>) {
        // Wrap modulo 2^bits (what MPI and NCCL do in practice) instead of signed-overflow UB.
        using U = std::make_unsigned_t<T>;
        for (std::size_t i = 0; i < n; ++i) out[i] = T(U(U(out[i]) + U(in[i])));
      } else {
        for (std::size_t i = 0; i < n; ++i) out[i] = T(out[i] + in[i]);
      }
      return;
    case ReduceOp::Max:
      for (std::size_t i = 0; i < n; ++i) out[i] = std::max(out[i], in[i]);
      return;
    case ReduceOp::Min:
      for (std::size_t i = 0; i < n; ++i) out[i] = std::min(out[i], in[i]);
      return;
  }
}

// f16/bf16 reduce through float, rounding once per pairwise step (what NCCL's kernels do).
template <float (*ToF)(std::uint16_t), std::uint16_t (*FromF)(float)>
void reduce_half(ReduceOp op, std::uint16_t* out, const std::uint16_t* in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float a = ToF(out[i]), b = ToF(in[i]);
    float r = a + b;
    if (op == ReduceOp::Max) r = std::max(a, b);
    if (op == ReduceOp::Min) r = std::min(a, b);
    out[i] = FromF(r);
  }
}
}  // namespace

double load_as_double(DType t, const void* p) {
  switch (t) {
    case DType::F32: return load<float>(p);
    case DType::F64: return load<double>(p);
    case DType::F16: return f16_to_float(load<std::uint16_t>(p));
    case DType::BF16: return bf16_to_float(load<std::uint16_t>(p));
    case DType::I32: return load<std::int32_t>(p);
    case DType::I64: return double(load<std::int64_t>(p));
    case DType::U8: return load<std::uint8_t>(p);
  }
  return 0;
}

void store_from_double(DType t, void* p, double v) {
  switch (t) {
    case DType::F32: store(p, float(v)); return;
    case DType::F64: store(p, v); return;
    case DType::F16: store(p, float_to_f16(float(v))); return;
    case DType::BF16: store(p, float_to_bf16(float(v))); return;
    case DType::I32: store(p, std::int32_t(v)); return;
    case DType::I64: store(p, std::int64_t(v)); return;
    case DType::U8: store(p, std::uint8_t(v)); return;
  }
}

void reduce_into(DType t, ReduceOp op, void* inout, const void* in, std::size_t n) {
  switch (t) {
    case DType::F32: return reduce_typed(op, static_cast<float*>(inout), static_cast<const float*>(in), n);
    case DType::F64: return reduce_typed(op, static_cast<double*>(inout), static_cast<const double*>(in), n);
    case DType::I32: return reduce_typed(op, static_cast<std::int32_t*>(inout), static_cast<const std::int32_t*>(in), n);
    case DType::I64: return reduce_typed(op, static_cast<std::int64_t*>(inout), static_cast<const std::int64_t*>(in), n);
    case DType::U8: return reduce_typed(op, static_cast<std::uint8_t*>(inout), static_cast<const std::uint8_t*>(in), n);
    case DType::F16:
      return reduce_half<f16_to_float, float_to_f16>(op, static_cast<std::uint16_t*>(inout),
                                                     static_cast<const std::uint16_t*>(in), n);
    case DType::BF16:
      return reduce_half<bf16_to_float, float_to_bf16>(op, static_cast<std::uint16_t*>(inout),
                                                       static_cast<const std::uint16_t*>(in), n);
  }
}

void finish_avg(DType t, void* inout, std::size_t n, int count) {
  auto* bytes = static_cast<std::byte*>(inout);
  const std::size_t es = dtype_size(t);
  for (std::size_t i = 0; i < n; ++i) {
    void* p = bytes + i * es;
    switch (t) {
      case DType::I32: store(p, std::int32_t(load<std::int32_t>(p) / count)); break;
      case DType::I64: store(p, std::int64_t(load<std::int64_t>(p) / count)); break;
      case DType::U8: store(p, std::uint8_t(load<std::uint8_t>(p) / count)); break;
      default: store_from_double(t, p, load_as_double(t, p) / count); break;
    }
  }
}

}  // namespace shardcal
