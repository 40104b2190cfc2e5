# `cpack -G DEB` (run in the build directory): one .deb of everything cmake/install.cmake
# installs, under /usr. Its Depends are computed by dpkg-shlibdeps from the shared
# libraries bin/llmport (and a shared libllmport) link, i.e. the Debian packages llmport
# links; the -dev packages find_package(llmport) needs to build against it are Recommends.
set(CPACK_PACKAGE_NAME llmport)
set(CPACK_PACKAGE_VENDOR llmport)
set(CPACK_PACKAGE_CONTACT "llmport maintainers <llmport@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "bring up, verify, tune and deploy Hugging Face decoder-only LLMs")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "nlohmann-json3-dev, libfmt-dev, libpcre2-dev, libutf8proc-dev, libicu-dev, libcurl4-openssl-dev, libssl-dev, libcpp-httplib-dev, pkg-config")
# python3-numpy runs `--reference numpy` (tools/numpy_reference.py); torch/transformers, not
# packaged in Debian, run `--reference hf`.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3, python3-numpy")
set(CPACK_OUTPUT_FILE_PREFIX ${PROJECT_BINARY_DIR}/packages)
include(CPack)
