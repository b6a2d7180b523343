#include "shardcal/placement.hpp"

#include <cctype>
#include <charconv>

#include "shardcal/error.hpp"

namespace shardcal {

std::string Placement::to_string() const {
  switch (kind) {
    case Kind::Replicate: return "R";
    case Kind::Partial: return "P(" + std::string(reduce_op_name(op)) + ")";
    case Kind::Shard: {
      std::string s = "S(" + std::to_string(dim) + ")";
      if (!sizes.empty()) {
        s += "[";
        for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? "," : "") + std::to_string(sizes[i]);
        s += "]";
      }
      return s;
    }
  }
  return "?";
}

std::string placements_to_string(const std::vector<Placement>& ps) {
  std::string s;
  for (std::size_t i = 0; i < ps.size(); ++i) s += (i ? "," : "") + ps[i].to_string();
  return s;
}

namespace {

// Recursive-descent parser that remembers where it is, so errors can point at the character.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::vector<Placement> parse_list() {
    std::vector<Placement> out;
    skip_space();
    if (at_end()) fail("expected at least one placement (S(d), R or P)");
    while (true) {
      out.push_back(parse_one());
      skip_space();
      if (at_end()) break;
      expect(',', "expected ',' between placements");
    }
    return out;
  }

 private:
  Placement parse_one() {
    skip_space();
    if (at_end()) fail("expected a placement (S(d), R or P) after ','");
    const char c = text_[pos_];
    if (c == 'R') {
      ++pos_;
      return Placement::replicate();
    }
    if (c == 'P') {
      ++pos_;
      skip_space();
      if (peek('(')) {
        ++pos_;
        skip_space();
        const std::size_t start = pos_;
        while (!at_end() && std::isalpha(static_cast<unsigned char>(text_[pos_]))) ++pos_;
        const std::string_view name = text_.substr(start, pos_ - start);
        ReduceOp op;
        try {
          op = parse_reduce_op(name);
        } catch (const Error&) {
          pos_ = start;
          fail("unknown Partial op '" + std::string(name) + "': expected sum, avg, max or min");
        }
        skip_space();
        expect(')', "expected ')' after the Partial op");
        return Placement::partial(op);
      }
      return Placement::partial(ReduceOp::Sum);
    }
    if (c == 'S') {
      ++pos_;
      skip_space();
      expect('(', "expected '(' after S, as in S(0)");
      const std::size_t dim_pos = pos_;
      const std::int64_t dim64 = parse_int("expected a tensor dim (non-negative integer), as in S(0)");
      if (dim64 > 64) {
        pos_ = dim_pos;
        fail("tensor dim " + std::to_string(dim64) + " is implausibly large (at most 64)");
      }
      const int dim = int(dim64);
      skip_space();
      expect(')', "expected ')' after the shard dim");
      skip_space();
      std::vector<std::int64_t> sizes;
      if (peek('[')) {
        ++pos_;
        while (true) {
          sizes.push_back(parse_int("expected a shard size (non-negative integer)"));
          skip_space();
          if (peek(']')) {
            ++pos_;
            break;
          }
          expect(',', "expected ',' or ']' in the shard size list");
        }
      }
      return Placement::shard(dim, std::move(sizes));
    }
    fail(std::string("unknown placement '") + c + "': expected S(d), S(d)[sizes], R, P or P(op)");
  }

  std::int64_t parse_int(const std::string& what) {
    skip_space();
    std::int64_t v = 0;
    const char* b = text_.data() + pos_;
    auto [ptr, ec] = std::from_chars(b, text_.data() + text_.size(), v);
    if (ec != std::errc() || ptr == b || v < 0) fail(what);
    pos_ += std::size_t(ptr - b);
    return v;
  }

  void expect(char c, const std::string& what) {
    skip_space();
    if (!peek(c)) fail(what);
    ++pos_;
  }
  bool peek(char c) const { return !at_end() && text_[pos_] == c; }
  bool at_end() const { return pos_ >= text_.size(); }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("bad placements \"" + std::string(text_) + "\" at character " +
                std::to_string(pos_ + 1) + ": " + what + "\n  " + std::string(text_) + "\n  " +
                std::string(pos_, ' ') + "^");
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<Placement> parse_placements(std::string_view text) { return Parser(text).parse_list(); }

}  // namespace shardcal
