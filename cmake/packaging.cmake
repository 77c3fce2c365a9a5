# Debian packages with CPack (scripts/package.sh builds them; docs/packaging.md):
#   cppcdc      the server binary (/usr/bin/cppcdc), the systemd unit cppcdc@.service, the man
#               page and an example configuration; the system user cppcdc is made by postinst
#   cppcdc-dev  what an embedder builds against: the static libraries, the public headers, the
#               CMake package and cppcdc.pc
# The libraries are static, so the server package needs nothing from cppcdc-dev and the two
# split cleanly along the install components "server" and "dev".
#
# The unit names the binary and the configuration directory with this build's install paths:
# configure with -DCMAKE_INSTALL_PREFIX=/usr for a package (scripts/package.sh does).

set(CPPCDC_PACKAGE_MAINTAINER "cppcdc maintainers <maintainers@cppcdc.invalid>"
    CACHE STRING "Maintainer field of the Debian packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cppcdc)
set(CPACK_PACKAGE_VENDOR cppcdc)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${CPPCDC_PACKAGE_MAINTAINER})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # cppcdc_0.1.0-1_amd64.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)

# cppcdc: Depends computed by dpkg-shlibdeps from the binary (libpq5, libmariadb3, libssl3,
# libcpp-httplib0.11 for the admin server,
# ...), plus adduser for postinst.
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME cppcdc)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION database)
set(CPACK_DEBIAN_SERVER_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS adduser)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/prerm
    ${PROJECT_SOURCE_DIR}/packaging/postrm)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_SERVER_DESCRIPTION
    "change data capture from PostgreSQL and MariaDB/MySQL to JSON events
cppcdc reads a database's change stream (PostgreSQL logical replication with
pgoutput, the MariaDB/MySQL binary log) and delivers one JSON event per changed
row to a file or standard output, at least once, with a crash-safe checkpoint.
.
This package holds the cppcdc binary, the systemd unit cppcdc@.service (one
pipeline per /etc/cppcdc/NAME.toml, run as the system user cppcdc), the manual
page and an example configuration.")

# cppcdc-dev: the headers and static libraries; Depends are the -dev packages of what the
# CMake package (cmake/cppcdcConfig.cmake.in) and cppcdc.pc make an embedder link.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME cppcdc-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libpq-dev, libmariadb-dev, libhiredis-dev, libzstd-dev, libisal-dev, zlib1g-dev, libssl-dev, libboost-json1.81-dev, \
libfmt-dev, libspdlog-dev, libexpected-dev, libprotobuf-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "change data capture library for C++20 (development files)
libcppcdc embeds cppcdc's change data capture in a C++20 program: sources
(PostgreSQL, MariaDB/MySQL), the runtime with its checkpoints, transforms,
sinks and codecs.
.
This package holds the static libraries, the headers under
/usr/include/cppcdc, the CMake package (find_package(cppcdc)) and cppcdc.pc.")

include(CPack)
