# What `make install` / `cmake --install` puts where (PREFIX is
# CMAKE_INSTALL_PREFIX, /usr/local by default; /usr in the Debian package):
#   bin/abx                                 the CLI (`abx serve` execs abx-daemon)
#   bin/abx-daemon                          the daemon (the CLI looks beside itself)
#   libexec/abx/abx-init                    PID 1 of every sandbox (the daemon looks
#                                           beside itself, then in ../libexec/abx)
#   share/abx/templates/                    template specs (src/templates/spec.cc looks
#                                           in ../share/abx/templates from bin/)
#   share/man/man1/abx.1                    from `abx __man` (the command tree)
#   share/bash-completion, zsh, fish        from `abx completion bash|zsh|fish`
#   lib/systemd/system/abx.service          root daemon, data in /var/lib/abx
#   lib/systemd/user/abx.service            a user's daemon, data in ~/.local/state/abx
# The generated files are made at install time (cmake/install_generated.cmake) from
# the built abx, so a plain `ninja abx abx-daemon abx-init` is all an install needs.
install(TARGETS abx abx-daemon RUNTIME DESTINATION bin)
install(TARGETS abx-init RUNTIME DESTINATION libexec/abx)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/templates/ DESTINATION share/abx/templates
        USE_SOURCE_PERMISSIONS)

set(ABX_GENERATED_DIR ${CMAKE_BINARY_DIR}/install-generated)
install(CODE "set(ABX_BINARY \"$<TARGET_FILE:abx>\")
set(ABX_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
set(ABX_GENERATED_DIR \"${ABX_GENERATED_DIR}\")")
install(SCRIPT ${CMAKE_SOURCE_DIR}/cmake/install_generated.cmake)

# `make uninstall`: every file the last install wrote (install_manifest.txt).
add_custom_target(uninstall
  COMMAND ${CMAKE_COMMAND} -DMANIFEST=${CMAKE_BINARY_DIR}/install_manifest.txt
          -P ${CMAKE_SOURCE_DIR}/cmake/uninstall.cmake
  VERBATIM)

# `make deb`: a Debian package (cpack -G DEB) whose Depends come from
# dpkg-shlibdeps, i.e. Debian's names for the libraries abx links.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME abx)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Disposable, isolated Linux sandboxes for AI agents' code")
set(CPACK_PACKAGE_DESCRIPTION
    "abx runs untrusted code in sandboxes made of Linux namespaces, cgroups and seccomp,\nwith an E2B-compatible API (abx serve) and a CLI.")
set(CPACK_PACKAGE_CONTACT "Agent Sandbox maintainers <abx@localhost>")
# Installed with DESTDIR under prefix /usr, so what install_generated.cmake writes
# (the units' ExecStart, the zsh dir) names /usr, not CPack's staging dir.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# mkfs.ext4: each volume is an ext4 image, its size a hard quota (dpkg-shlibdeps
# adds the libraries' packages to this).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "e2fsprogs")
# Programs the daemon runs when present: base template builds, sandbox /proc
# views, rootless id maps and rootless networking.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "mmdebstrap, lxcfs, uidmap, slirp4netns")
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/packages)
include(CPack)
