// Shared by the two halves of the extension shardcal._core: the profile and pricing bindings
// (_core.cpp) and the DTensor plan search (_dtensor_search.cpp), which prices with the same
// C++ objects (pricing_api.hpp), so there is one pricer, not a copy per consumer.
#pragma once
#include <pybind11/pybind11.h>

#include "shardcal/calibrate/pricing_api.hpp"

namespace shardcal_py {

// Profile.time_fn's value: a class's price as a Python callable (nbytes -> us), which the search
// evaluates without Python.
struct TimeFn {
  shardcal::calib::ClassPricer pricer;
  double operator()(double nbytes) const { return pricer(nbytes); }
};

// Adds the search's names (Graph, MeshPrices, plan, transform_info) to m.
void bind_search(pybind11::module_& m);

}  // namespace shardcal_py
