# Replay tests (label unit): every fuzz target of targets.cmake, built as a plain executable
# with replay_main.cpp instead of libFuzzer, runs its corpus and its kept crash inputs. They
# build with the rest of the tests, so the ASan build runs them under ASan and UBSan.
include(${CMAKE_CURRENT_LIST_DIR}/targets.cmake)

foreach(name ${cppcdc_fuzz_targets})
  add_executable(${name}_fuzz_replay ${cppcdc_fuzz_dir}/${name}_fuzz.cpp
                                     ${cppcdc_fuzz_dir}/replay_main.cpp)
  target_include_directories(${name}_fuzz_replay PRIVATE ${cppcdc_fuzz_root}/include
                                                         ${cppcdc_fuzz_root}/src)
  target_link_libraries(${name}_fuzz_replay PRIVATE ${cppcdc_fuzz_${name}_libs})
  add_test(NAME fuzz_replay.${name}
           COMMAND ${name}_fuzz_replay ${cppcdc_fuzz_dir}/corpus/${name}
                                       ${cppcdc_fuzz_dir}/regressions/${name})
  set_tests_properties(fuzz_replay.${name} PROPERTIES LABELS unit)
endforeach()
