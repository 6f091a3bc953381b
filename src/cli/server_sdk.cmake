# Embeds the in-sandbox server (sdk/python-server/agent_sandbox/server, pure
# Python) into abx_cli, so `abx template build DIR` of a dir that holds only a
# commands.py can put the server into the template: no wheel, no pip, no
# network needed at build time.
file(GLOB_RECURSE ABX_SERVER_SDK_FILES CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/sdk/python-server/agent_sandbox/server/*.py)
set(ABX_SERVER_SDK_CC ${CMAKE_BINARY_DIR}/generated/cli/server_sdk_files.cc)
add_custom_command(
  OUTPUT ${ABX_SERVER_SDK_CC}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${ABX_SERVER_SDK_CC}
          -DROOT=${CMAKE_SOURCE_DIR}/sdk/python-server "-DFILES=${ABX_SERVER_SDK_FILES}"
          -P ${CMAKE_SOURCE_DIR}/src/cli/embed_server_sdk.cmake
  DEPENDS ${ABX_SERVER_SDK_FILES} ${CMAKE_SOURCE_DIR}/src/cli/embed_server_sdk.cmake
  COMMENT "Embedding the in-sandbox server SDK"
  VERBATIM)
target_sources(abx_cli PRIVATE ${ABX_SERVER_SDK_CC})
# Generated, and one file of its own: not part of the unity batches.
set_source_files_properties(${ABX_SERVER_SDK_CC} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
