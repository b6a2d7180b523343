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

# The dynamic loader's path (PT_INTERP of this system's /bin/sh), for the SMPI shardbench's
# direct-run guard (bench/src/smpi/direct_run.cpp): without it, that shared object run by itself
# dies with SIGSEGV instead of saying to use smpirun.
set(SHARDCAL_SMPI_INTERP "")
if(CMAKE_READELF)
  execute_process(COMMAND ${CMAKE_READELF} -l /bin/sh OUTPUT_VARIABLE _shardcal_sh_headers
                  ERROR_QUIET RESULT_VARIABLE _shardcal_readelf_rc)
  if(_shardcal_readelf_rc EQUAL 0 AND _shardcal_sh_headers MATCHES "interpreter: ([^]\n]+)]")
    set(SHARDCAL_SMPI_INTERP "${CMAKE_MATCH_1}")
  endif()
endif()
if(NOT SHARDCAL_SMPI_INTERP)
  message(WARNING "shardcal: no dynamic loader path found (readelf -l /bin/sh): the SMPI "
                  "shardbench will crash instead of printing an error when run without smpirun")
endif()
