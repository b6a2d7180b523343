#include "sweep/distribution.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <random>

#include "shardcal/error.hpp"

namespace shardbench::sweep {

namespace {

std::string format_number(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw shardcal::Error("bad distribution \"" + std::string(text) + "\": " + why +
                        "; expected one of even, chunk, linear(R) with R >= 1, zipf(S) with "
                        "S > 0, one_empty, random(SEED)");
}

}  // namespace

std::string Distribution::name() const {
  switch (kind) {
    case Kind::Even: return "even";
    case Kind::Chunk: return "chunk";
    case Kind::Linear: return "linear(" + format_number(param) + ")";
    case Kind::Zipf: return "zipf(" + format_number(param) + ")";
    case Kind::OneEmpty: return "one_empty";
    case Kind::Random: return "random(" + std::to_string(seed) + ")";
  }
  return "?";
}

Distribution Distribution::parse(std::string_view text) {
  const std::size_t open = text.find('(');
  const std::string_view head = text.substr(0, open);
  std::string_view arg;
  if (open != std::string_view::npos) {
    if (text.back() != ')') bad(text, "missing ')'");
    arg = text.substr(open + 1, text.size() - open - 2);
  }
  auto number = [&](double& out) {
    auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), out);
    if (arg.empty() || ec != std::errc() || ptr != arg.data() + arg.size() || !std::isfinite(out))
      bad(text, "'" + std::string(arg) + "' is not a number");
  };
  Distribution d;
  if (head == "even" || head == "chunk" || head == "one_empty") {
    if (open != std::string_view::npos) bad(text, std::string(head) + " takes no parameter");
    d.kind = head == "even" ? Kind::Even : head == "chunk" ? Kind::Chunk : Kind::OneEmpty;
  } else if (head == "linear" || head == "zipf") {
    if (open == std::string_view::npos) bad(text, std::string(head) + " needs a parameter");
    number(d.param);
    d.kind = head == "linear" ? Kind::Linear : Kind::Zipf;
    if (d.kind == Kind::Linear && d.param < 1.0) bad(text, "the linear ratio must be >= 1");
    if (d.kind == Kind::Zipf && !(d.param > 0.0)) bad(text, "the zipf exponent must be > 0");
  } else if (head == "random") {
    if (open == std::string_view::npos) bad(text, "random needs a seed, e.g. random(1)");
    auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), d.seed);
    if (arg.empty() || ec != std::errc() || ptr != arg.data() + arg.size())
      bad(text, "the seed must be a non-negative integer");
    d.kind = Kind::Random;
  } else {
    bad(text, "unknown kind \"" + std::string(head) + "\"");
  }
  return d;
}

std::vector<std::int64_t> apportion(std::int64_t total, const std::vector<double>& weights) {
  const std::size_t n = weights.size();
  std::vector<std::int64_t> out(n, 0);
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (n == 0 || total <= 0 || !(sum > 0)) {
    if (n > 0 && total > 0) out[0] = total;
    return out;
  }
  std::vector<double> rem(n);
  std::int64_t given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double exact = double(total) * weights[i] / sum;
    out[i] = std::int64_t(std::floor(exact));
    rem[i] = exact - double(out[i]);
    given += out[i];
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rem[a] > rem[b]; });
  // Floating rounding can leave `given` off by a few either way; fix it deterministically.
  for (std::size_t k = 0; given < total; k = (k + 1) % n, ++given) ++out[order[k]];
  for (std::size_t k = n; given > total;) {
    k = (k == 0 ? n : k) - 1;
    if (out[order[k]] > 0) --out[order[k]], --given;
  }
  return out;
}

std::vector<std::int64_t> Distribution::split(std::int64_t total, int n) const {
  const std::size_t nn = std::size_t(std::max(n, 1));
  std::vector<double> w(nn, 1.0);
  switch (kind) {
    case Kind::Even:
      return std::vector<std::int64_t>(nn, std::max<std::int64_t>(1, total / std::int64_t(nn)));
    case Kind::Chunk: {  // torch.chunk: ceil-sized pieces, trailing ones short or empty
      std::vector<std::int64_t> out(nn, 0);
      const std::int64_t c = (total + std::int64_t(nn) - 1) / std::int64_t(nn);
      for (std::size_t i = 0; i < nn; ++i)
        out[i] = std::clamp<std::int64_t>(total - c * std::int64_t(i), 0, c);
      return out;
    }
    case Kind::Linear:  // weights rise linearly from 1 (rank 0) to param (last rank)
      for (std::size_t i = 0; i < nn; ++i)
        w[i] = nn == 1 ? 1.0 : 1.0 + (param - 1.0) * double(i) / double(nn - 1);
      break;
    case Kind::Zipf:  // rank i holds a share proportional to 1/(i+1)^s
      for (std::size_t i = 0; i < nn; ++i) w[i] = 1.0 / std::pow(double(i + 1), param);
      break;
    case Kind::OneEmpty:  // the last rank holds nothing, the others share evenly
      if (nn > 1) w[nn - 1] = 0.0;
      break;
    case Kind::Random: {
      // mt19937_64's output sequence is fixed by the standard, so counts are reproducible
      // across compilers (unlike std::uniform_real_distribution).
      std::mt19937_64 gen(seed);
      for (std::size_t i = 0; i < nn; ++i) w[i] = double(gen() >> 11) * 0x1p-53;
      break;
    }
  }
  return apportion(total, w);
}

}  // namespace shardbench::sweep
