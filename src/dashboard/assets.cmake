# Embeds the dashboard's files (plain ES modules, CSS and one HTML page, no
# build step) into abx_daemon as raw string literals, the way the interpreter
# drivers are embedded (src/interp/drivers.cmake; both through cmake/embed_files.cmake): the binary serves them and
# reads nothing at run time.
file(GLOB ABX_DASHBOARD_ASSETS CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/src/dashboard/*.html
     ${CMAKE_SOURCE_DIR}/src/dashboard/*.js
     ${CMAKE_SOURCE_DIR}/src/dashboard/*.css)
# xterm.js for the terminal, from npm (package.json and its lock beside this
# file; `make deps` runs npm ci). A tree without it builds a dashboard whose
# sandbox page says the terminal was left out.
set(ABX_XTERM_DIR ${CMAKE_SOURCE_DIR}/src/dashboard/node_modules/@xterm/xterm)
if(EXISTS ${ABX_XTERM_DIR}/lib/xterm.mjs)
  list(APPEND ABX_DASHBOARD_ASSETS ${ABX_XTERM_DIR}/lib/xterm.mjs ${ABX_XTERM_DIR}/css/xterm.css)
else()
  message(WARNING "dashboard: no ${ABX_XTERM_DIR} (run make deps): the terminal is left out")
endif()
set(ABX_DASHBOARD_ASSETS_CC ${CMAKE_BINARY_DIR}/generated/dashboard/assets.cc)
add_custom_command(
  OUTPUT ${ABX_DASHBOARD_ASSETS_CC}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ABX_DASHBOARD_ASSETS_CC} "-DASSETS=${ABX_DASHBOARD_ASSETS}"
          -P ${CMAKE_SOURCE_DIR}/src/dashboard/embed_assets.cmake
  DEPENDS ${ABX_DASHBOARD_ASSETS} ${CMAKE_SOURCE_DIR}/src/dashboard/embed_assets.cmake
          ${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake
  COMMENT "Embedding the dashboard's assets"
  VERBATIM)
target_sources(abx_daemon PRIVATE ${ABX_DASHBOARD_ASSETS_CC})
