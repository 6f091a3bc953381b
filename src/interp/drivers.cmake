# Embeds the context drivers (src/interp/*_driver.*, and python_charts.py which
# the Python driver gets as its argument) into abx_interp as raw
# string literals, so the binary carries them and nothing is read at runtime.
set(ABX_INTERP_DRIVERS
    ${CMAKE_SOURCE_DIR}/src/interp/python_driver.py
    ${CMAKE_SOURCE_DIR}/src/interp/python_charts.py
    ${CMAKE_SOURCE_DIR}/src/interp/javascript_driver.js
    ${CMAKE_SOURCE_DIR}/src/interp/bash_driver.sh)
set(ABX_INTERP_DRIVERS_CC ${CMAKE_BINARY_DIR}/generated/interp/driver_sources.cc)
add_custom_command(
  OUTPUT ${ABX_INTERP_DRIVERS_CC}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ABX_INTERP_DRIVERS_CC} "-DDRIVERS=${ABX_INTERP_DRIVERS}"
          -P ${CMAKE_SOURCE_DIR}/src/interp/embed_drivers.cmake
  DEPENDS ${ABX_INTERP_DRIVERS} ${CMAKE_SOURCE_DIR}/src/interp/embed_drivers.cmake
          ${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake
  COMMENT "Embedding interpreter drivers"
  VERBATIM)
target_sources(abx_interp PRIVATE ${ABX_INTERP_DRIVERS_CC})
