// Test helper: reads one JSON case per stdin line and prints one JSON result per line, so
// scipy_reference.py can compare the gate's statistics with scipy's.
//   {"op": "mwu", "x": [...], "y": [...]}          -> {"u": U1, "p": p}
//   {"op": "mwu_exact", "x": [...], "y": [...]}    -> {"u": U1, "p": p} or {"p": null}
//   {"op": "bh" | "holm", "p": [...]}                -> {"q": [...]}
//   {"op": "median", "x": [...]}                     -> {"median": m}
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "shardcal/gate/stats.hpp"

int main() {
  using nlohmann::json;
  namespace g = shardcal::gate;
  std::string line;
  while (std::getline(std::cin, line)) {
    const json c = json::parse(line);
    const std::string op = c.at("op");
    json out;
    if (op == "mwu") {
      const auto x = c.at("x").get<std::vector<double>>();
      const auto y = c.at("y").get<std::vector<double>>();
      const auto r = g::mann_whitney_u(x, y);
      out = {{"u", r.u}, {"p", r.p}};
    } else if (op == "mwu_exact") {
      const auto x = c.at("x").get<std::vector<double>>();
      const auto y = c.at("y").get<std::vector<double>>();
      const auto r = g::mann_whitney_u_exact(x, y);
      out = r ? json{{"u", r->u}, {"p", r->p}} : json{{"p", nullptr}};
    } else if (op == "bh" || op == "holm") {
      const auto p = c.at("p").get<std::vector<double>>();
      out = {{"q", op == "bh" ? g::benjamini_hochberg(p) : g::holm(p)}};
    } else if (op == "median") {
      out = {{"median", g::median(c.at("x").get<std::vector<double>>())}};
    } else {
      std::cerr << "unknown op " << op << "\n";
      return 2;
    }
    std::cout << out.dump() << "\n";
  }
  return 0;
}
