# cmake -P script: writes OUTPUT, a .cc defining one function per driver in
# DRIVERS (python_driver.py → abx::interp::python_driver_source()).
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/embed_files.cmake)
set(accessors "")
set(index 0)
foreach(driver IN LISTS DRIVERS)
  get_filename_component(stem ${driver} NAME_WE)
  string(APPEND accessors "std::string_view ${stem}_source() { return {kFile${index}, sizeof(kFile${index}) - 1}; }\n")
  math(EXPR index "${index} + 1")
endforeach()
abx_embed_files(OUTPUT ${OUTPUT} HEADER "interp/driver_sources.h" NAMESPACE abx::interp
                DELIMITER abx_driver ACCESSORS_VAR accessors FILES ${DRIVERS})
