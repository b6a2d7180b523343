# The SMPI build (SHARDCAL_SMPI=ON, `cmake --preset smpi`; docs/SIMULATION.md): shardbench for
# SimGrid's simulated MPI. The compiler is smpicxx, which brings SMPI's mpi.h and libsimgrid
# and links every program as the shared object smpirun loads once per rank, so no MPI package
# is searched for. What differs at run time is all in core/backends/mpi/smpi_seam.hpp,
# force-included here into every translation unit (after smpicxx's own smpi_helpers.h).
get_filename_component(_shardcal_cxx_name "${CMAKE_CXX_COMPILER}" NAME)
if(NOT _shardcal_cxx_name MATCHES "^smpicxx")
  message(FATAL_ERROR "SHARDCAL_SMPI=ON needs CMAKE_CXX_COMPILER=smpicxx (got ${CMAKE_CXX_COMPILER}); "
                      "use `cmake --preset smpi` (install libsimgrid-dev: scripts/setup.sh)")
endif()
add_compile_options(-include ${PROJECT_SOURCE_DIR}/core/backends/mpi/smpi_seam.hpp)
add_library(MPI::MPI_C INTERFACE IMPORTED)
set(SHARDCAL_HAVE_MPI ON)
set(SHARDCAL_WITH_NCCL OFF)
execute_process(COMMAND ${CMAKE_CXX_COMPILER} --version OUTPUT_VARIABLE _shardcal_smpi_version
                OUTPUT_STRIP_TRAILING_WHITESPACE)
message(STATUS "shardcal: SMPI build (${_shardcal_smpi_version})")
