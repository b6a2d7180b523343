#pragma once
// Element types and reduction ops. Values are moved as raw bytes; only reductions, fills and
// verification need to know what an element means.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shardcal {

enum class DType : std::uint8_t { F32, F64, F16, BF16, I32, I64, U8 };
inline constexpr DType kAllDTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                                       DType::I32, DType::I64, DType::U8};

enum class ReduceOp : std::uint8_t { Sum, Avg, Max, Min };
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max,
                                             ReduceOp::Min};

[[noreturn]] void throw_unknown_dtype();  // "internal: unknown dtype"
// Inline: every collective call asks it (the MPI backend's 0.25 us calls in parity.sh).
inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::U8: return 1;
  }
  throw_unknown_dtype();
}
std::string_view dtype_name(DType t);      // "f32", "bf16", ...
DType parse_dtype(std::string_view text);  // throws Error listing the valid names
std::string_view reduce_op_name(ReduceOp op);
ReduceOp parse_reduce_op(std::string_view text);  // "sum" | "avg" | "max" | "min"

// Element <-> double conversion (exact for the integer-valued test data we use).
double load_as_double(DType t, const void* p);
void store_from_double(DType t, void* p, double v);

// out[i] = op(out[i], in[i]) for n elements; Avg accumulates like Sum (divide with finish_avg).
void reduce_into(DType t, ReduceOp op, void* inout, const void* in, std::size_t n);
// Divide n elements by `count` (the group size) to turn a sum into an average. Integers
// truncate toward zero, as MPI/NCCL do for integer averages.
void finish_avg(DType t, void* inout, std::size_t n, int count);

}  // namespace shardcal
