// shardcal._core: the package's one compiled module. Python reaches the C++ cost model through it
// (docs/CALIBRATION.md "The model"): the profile reader (profile_read.cpp), predict() with its
// 95 % interval, notes and host transport (predict.cpp, host_transport.cpp, cost_model.cpp), a
// class's time-only price function (pricing_api.hpp) and, in the submodule `search`, the DTensor
// adapter's plan search (_dtensor_search.cpp), which prices with those same functions. Python
// keeps the glue: argument defaults, views of the profile's fields, the torch adapters.
// shardcal::Error (a bad profile or query) is raised as shardcal._core.ProfileError (a
// ValueError), one exception with the reader's or predict()'s message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "_core.hpp"
#include "shardcal/calibrate/profile.hpp"
#include "shardcal/collectives.hpp"
#include "shardcal/dtype.hpp"
#include "shardcal/error.hpp"

namespace py = pybind11;
namespace calib = shardcal::calib;
using shardcal::Collective;
using shardcal::Error;

namespace {

Collective collective(const std::string& name) {
  if (auto c = shardcal::find_collective(name)) return *c;
  std::string names;
  for (const auto& info : shardcal::kCollectives) names += (names.empty() ? "" : ", ") + std::string(info.name);
  throw Error("unknown collective '" + name + "'; use one of " + names);
}

std::optional<shardcal::DType> dtype(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return shardcal::parse_dtype(*name);
}

calib::EffectiveSize rule(const std::string& name) {
  if (auto r = calib::parse_effective_size(name)) return *r;
  throw Error("unknown effective-size rule '" + name + "'; use \"total\" or \"n_times_max\"");
}

py::tuple range(const calib::Range& r) {
  return py::make_tuple(r.lo, r.hi ? py::object(py::float_(*r.hi)) : py::object(py::none()));
}

// A profile parsed once by the C++ reader; Python's shardcal.profile.Profile holds one.
struct Profile {
  std::shared_ptr<const calib::Profile> p;

  int index_of(const calib::Model* m) const { return int(m - p->models.data()); }

  // Each model's domain as predict() uses it (effective_domain: written, else derived).
  py::list domains() const {
    py::list out;
    for (const auto& m : p->models) {
      const calib::Domain d = calib::effective_domain(m);
      py::list classes;
      for (const auto& [n, c] : d.classes) classes.append(py::make_tuple(n, c));
      py::dict o;
      o["hosts"] = range(d.hosts);
      o["concurrent_groups"] = range(d.concurrent_groups);
      o["group_size"] = range(d.group_size);
      o["bytes"] = range(d.bytes);
      o["classes"] = classes;
      out.append(o);
    }
    return out;
  }

  calib::LinkClass link(int n, int hosts, int rph, int c, int spanned = 0) const {
    return {n, hosts, rph, c, spanned};
  }

  // predict() and the query's S_eff, as a tuple shardcal.predict.Prediction is made from.
  py::tuple predict(const std::string& coll, int n, int hosts, int rph, double nbytes,
                    const std::vector<std::int64_t>& counts, int elem_size,
                    const std::optional<std::string>& dt, int c, bool check_class, int spanned) const {
    const Collective op = collective(coll);
    const calib::Prediction pr = calib::predict(*p, op, link(n, hosts, rph, c, spanned), nbytes, counts, elem_size,
                                                dtype(dt), check_class);
    const double s_eff = calib::effective_bytes(op, pr.model->effective_size, nbytes, counts, elem_size, n);
    return py::make_tuple(pr.time_us, index_of(pr.model), pr.segment, pr.extrapolated, pr.note, s_eff,
                          pr.lo_us, pr.hi_us, pr.basis, pr.class_note, pr.size_octaves,
                          pr.size_edge_bytes, pr.other_side);
  }

  shardcal_py::TimeFn time_fn(const std::string& coll, int n, int hosts, int rph,
                              const std::optional<std::string>& dt, int c, int spanned) const {
    return {calib::ClassPricer(p, collective(coll), link(n, hosts, rph, c, spanned), dtype(dt))};
  }

  // host_transport() for the model at `best` and the query's class: its fields, None when inactive.
  py::object host_transport(int best, int n, int hosts, int rph, int c) const {
    if (best < 0 || std::size_t(best) >= p->models.size()) throw Error("host_transport: no model " + std::to_string(best));
    const calib::HostTransport t = calib::host_transport(*p, p->models[std::size_t(best)], link(n, hosts, rph, c));
    if (!t.active) return py::none();
    py::dict o;
    o["other"] = t.other ? py::object(py::int_(index_of(t.other))) : py::object(py::none());
    o["n_model"] = t.n_model;
    o["n_other"] = t.n_other;
    o["n_query"] = t.n_query;
    o["doublings"] = t.doublings;
    o["test_doublings"] = t.test_doublings;
    o["law"] = std::string(calib::latency_law_name(t.law));
    o["bw_law"] = std::string(calib::bandwidth_law_name(t.bw_law));
    o["law_tested"] = t.law_tested;
    o["law_discriminated"] = t.law_discriminated;
    o["test_switch"] = t.test_switch;
    o["latency_us"] = t.latency_us;
    o["latency_ratio"] = t.latency_ratio;
    o["bus_ratio"] = t.bus_ratio;
    o["switch_lo_log_sigma"] = t.switch_lo_log_sigma;
    o["switch_hi_log_sigma"] = t.switch_hi_log_sigma;
    o["two_node_switch"] = t.two_node_switch;
    o["algorithm_unknown"] = t.algorithm_unknown;
    o["step_log_sigma"] = t.step_log_sigma;
    o["selector"] = t.selector;
    o["note"] = calib::transport_note(t, p->models[std::size_t(best)], link(n, hosts, rph, c));
    return o;
  }

  py::tuple mesh_dim(const std::string& coll, int n, int hosts, int rph, int c, std::optional<double> probe,
                     const std::optional<std::string>& dt, int spanned) const {
    const calib::MeshDimNumbers d =
        calib::mesh_dim_numbers(*p, collective(coll), link(n, hosts, rph, c, spanned), probe, dtype(dt));
    return py::make_tuple(d.bandwidth_GBps, d.step_latency_us, d.base_latency_us, d.extrapolated, d.note);
  }
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "shardcal's C++ cost model for Python: profiles, predict, time_fn, the DTensor plan search";
  // ProfileError(ValueError) with the C++ message decoded leniently: a message that is not valid
  // UTF-8 (a quoted value cut mid-character) still reads, where PyErr_SetString would leave it
  // empty. The type object is kept for the interpreter's life (never freed).
  static PyObject* profile_error = py::exception<Error>(m, "ProfileError", PyExc_ValueError).inc_ref().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      const std::string what = e.what();
      PyObject* msg = PyUnicode_DecodeUTF8(what.data(), Py_ssize_t(what.size()), "replace");
      PyErr_SetObject(profile_error, msg);
      Py_XDECREF(msg);
    }
  });
  py::class_<Profile>(m, "Profile")
      .def(py::init([](const std::string& text, const std::string& origin) {
             return Profile{std::make_shared<const calib::Profile>(calib::parse_profile(text, origin))};
           }),
           py::arg("text"), py::arg("origin"))
      .def("domains", &Profile::domains)
      .def("predict", &Profile::predict, py::arg("collective"), py::arg("group_size"), py::arg("hosts"),
           py::arg("ranks_per_host"), py::arg("nbytes"), py::arg("counts"), py::arg("elem_size"), py::arg("dtype"),
           py::arg("concurrent_groups"), py::arg("check_class"), py::arg("spanned_hosts") = 0)
      .def("time_fn", &Profile::time_fn, py::arg("collective"), py::arg("group_size"), py::arg("hosts"),
           py::arg("ranks_per_host"), py::arg("dtype"), py::arg("concurrent_groups"), py::arg("spanned_hosts") = 0)
      .def("host_transport", &Profile::host_transport, py::arg("best"), py::arg("group_size"), py::arg("hosts"),
           py::arg("ranks_per_host"), py::arg("concurrent_groups"))
      .def("mesh_dim", &Profile::mesh_dim, py::arg("collective"), py::arg("group_size"), py::arg("hosts"),
           py::arg("ranks_per_host"), py::arg("concurrent_groups"), py::arg("probe"), py::arg("dtype"),
           py::arg("spanned_hosts") = 0);
  py::class_<shardcal_py::TimeFn>(m, "TimeFn")
      .def("__call__", &shardcal_py::TimeFn::operator(), py::arg("nbytes"));
  m.def("effective_bytes",
        [](const std::string& coll, const std::string& r, double nbytes, const std::vector<std::int64_t>& counts,
           int elem_size, int group_size) {
          return calib::effective_bytes(collective(coll), rule(r), nbytes, counts, elem_size, group_size);
        });
  m.def("table_bytes", [](const std::string& coll, const std::vector<std::int64_t>& counts, int elem_size,
                          int group_size) { return calib::table_bytes(collective(coll), counts, elem_size, group_size); });
  m.def("bandwidth_growth", [](const std::string& law, const std::string& coll, int n_b, int h_b, int n, int h) {
    if (law != "host-share" && law != "bus-factor") throw Error("unknown bandwidth law '" + law + "'; use host-share or bus-factor");
    return calib::bandwidth_growth(law == "host-share" ? calib::BandwidthLaw::HostShare : calib::BandwidthLaw::BusFactor,
                                   collective(coll), n_b, h_b, n, h);
  });
  m.def("known_switch", [](const std::string& coll, const std::string& backend, int h_b, int h) {
    return calib::known_switch(collective(coll), backend, h_b, h);
  });
  py::module_ search = m.def_submodule("search", "DTensor's min-cost redistribution search (_dtensor_search.cpp)");
  shardcal_py::bind_search(search);
}
