# Run by `cmake --install` (see cmake/install.cmake): makes the files that come
# from the built abx or depend on the install prefix, then installs them with
# file(INSTALL), which honours DESTDIR and records them in install_manifest.txt.
# Set before: ABX_BINARY, ABX_SOURCE_DIR, ABX_GENERATED_DIR.
set(prefix "${CMAKE_INSTALL_PREFIX}")
set(out "${ABX_GENERATED_DIR}")
file(MAKE_DIRECTORY "${out}/system" "${out}/user")

# The help texts name the config file under the user's home: "~", not the builder's.
set(as_anyone "${CMAKE_COMMAND}" -E env --unset=XDG_CONFIG_HOME --unset=ABX_CONFIG_DIR "HOME=~")

function(abx_output file)
  execute_process(COMMAND ${as_anyone} "${ABX_BINARY}" ${ARGN} OUTPUT_FILE "${out}/${file}"
                  RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "abx ${ARGN} failed (${failed}): is ${ABX_BINARY} built?")
  endif()
endfunction()

# Shell completions, from the CLI's own command tree.
abx_output(abx completion bash)
abx_output(_abx completion zsh)
abx_output(abx.fish completion fish)
file(INSTALL "${out}/abx" DESTINATION "${prefix}/share/bash-completion/completions")
# Debian's zsh reads /usr/share/zsh/vendor-completions and /usr/local/share/zsh/site-functions.
if(prefix STREQUAL "/usr")
  file(INSTALL "${out}/_abx" DESTINATION "${prefix}/share/zsh/vendor-completions")
else()
  file(INSTALL "${out}/_abx" DESTINATION "${prefix}/share/zsh/site-functions")
endif()
file(INSTALL "${out}/abx.fish" DESTINATION "${prefix}/share/fish/vendor_completions.d")

# The man page, from the CLI's own command tree (`abx __man`): every command's options.
abx_output(abx.1 __man)
file(INSTALL "${out}/abx.1" DESTINATION "${prefix}/share/man/man1")

# systemd units that run the installed abx.
set(ABX_BINDIR "${prefix}/bin")
foreach(kind system user)
  configure_file("${ABX_SOURCE_DIR}/dist/systemd/${kind}/abx.service.in"
                 "${out}/${kind}/abx.service" @ONLY)
  file(INSTALL "${out}/${kind}/abx.service" DESTINATION "${prefix}/lib/systemd/${kind}")
endforeach()
