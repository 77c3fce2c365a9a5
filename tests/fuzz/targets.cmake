# The fuzz targets, shared by the libFuzzer build (CMakeLists.txt here, CPPCDC_FUZZ=ON) and the
# replay tests of the normal build (replay.cmake, included by tests/CMakeLists.txt).
# For a target NAME:
#   NAME_fuzz.cpp                  defines LLVMFuzzerTestOneInput
#   corpus/NAME/                   seed inputs (small valid and near-valid ones)
#   regressions/NAME/              every input that once failed (kept for good)
#   cppcdc_fuzz_NAME_sources       the parser's own sources, relative to the repository: the
#                                  libFuzzer build compiles them with coverage instrumentation
#                                  and sanitizers
#   cppcdc_fuzz_NAME_libs          the project's libraries that hold those sources and what they
#                                  need: the replay executable links them; the libFuzzer build
#                                  links them too, for everything but the sources above (its
#                                  own objects come first, so the libraries' copies of those
#                                  sources are never pulled in)
#   cppcdc_fuzz_NAME_fuzz_libs     when set, what the libFuzzer build links instead
get_filename_component(cppcdc_fuzz_root ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)
set(cppcdc_fuzz_dir ${CMAKE_CURRENT_LIST_DIR})

set(cppcdc_fuzz_targets pgoutput event checkpoint incremental_state copy_text config
    transform_path binlog_event binlog_rows json_binary avro_codec debezium_json cloudevents
    json_schema protobuf_codec glue_frame)

# Where PostgreSQL's LSN type lives (the one line to change when it moves).
set(cppcdc_fuzz_pg_lsn_source src/source/postgres/lsn.cpp)

# pgoutput messages, CopyBoth frames and COPY text rows from the replication connection.
set(cppcdc_fuzz_pgoutput_sources src/source/postgres/pgoutput.cpp ${cppcdc_fuzz_pg_lsn_source})
set(cppcdc_fuzz_pgoutput_libs cppcdc_postgres)

# Event::from_json: envelopes read back from a sink's output.
set(cppcdc_fuzz_event_sources src/core/event.cpp)
set(cppcdc_fuzz_event_libs cppcdc_core)

# FileCheckpoint::decode: the checkpoint file.
set(cppcdc_fuzz_checkpoint_sources src/checkpoint/file_checkpoint.cpp)
set(cppcdc_fuzz_checkpoint_libs cppcdc_checkpoint)

# IncrementalSnapshotState::from_json: the snapshot's progress in the checkpoint's source_state.
set(cppcdc_fuzz_incremental_state_sources src/snapshot/incremental_state.cpp)
set(cppcdc_fuzz_incremental_state_libs cppcdc_snapshot)

# The COPY text rows of the blocking snapshot (header only).
set(cppcdc_fuzz_copy_text_sources)
set(cppcdc_fuzz_copy_text_libs)

# cdc.toml. The libFuzzer build compiles toml++ into the target (header-only mode) so that the
# TOML parser is instrumented too, instead of linking the server library and the shared toml++.
# The plugins read their own sections (the PostgreSQL source's settings are in its library), so
# the libFuzzer build links every plugin library and compiles the server's list of them.
set(cppcdc_fuzz_config_sources src/server/config.cpp src/server/builtin_plugins.cpp)
set(cppcdc_fuzz_config_libs cppcdc_server)
set(cppcdc_fuzz_config_fuzz_libs cppcdc_lib)

# Field paths of the filter and mask actions, and their walk through a JSON column value.
set(cppcdc_fuzz_transform_path_sources src/transform/path.cpp src/transform/columns.cpp
    src/transform/mask.cpp src/transform/filter.cpp)
set(cppcdc_fuzz_transform_path_libs cppcdc_transform)

# MySQL/MariaDB binlog events (with their zlib/zstd decompression), row images and binary
# JSON from the replication stream.
set(cppcdc_fuzz_binlog_event_sources src/source/mysql/binlog_event.cpp src/source/mysql/gtid.cpp)
set(cppcdc_fuzz_binlog_event_libs cppcdc_mysql)
set(cppcdc_fuzz_binlog_rows_sources src/source/mysql/row_decoder.cpp
    src/source/mysql/json_binary.cpp)
set(cppcdc_fuzz_binlog_rows_libs cppcdc_mysql)
set(cppcdc_fuzz_json_binary_sources src/source/mysql/json_binary.cpp
    src/source/mysql/row_decoder.cpp)
set(cppcdc_fuzz_json_binary_libs cppcdc_mysql)

# The codecs' readers: Avro datums (bare) and Debezium values. The JSON codec's reader is
# Event::from_json (the event target above).
set(cppcdc_fuzz_avro_codec_sources src/codec/avro/avro_codec.cpp)
set(cppcdc_fuzz_avro_codec_libs cppcdc_codec_avro)
set(cppcdc_fuzz_debezium_json_sources src/codec/debezium/debezium_codec.cpp)
set(cppcdc_fuzz_debezium_json_libs cppcdc_codec_debezium)
set(cppcdc_fuzz_cloudevents_sources src/codec/cloudevents/cloudevents_codec.cpp)
set(cppcdc_fuzz_cloudevents_libs cppcdc_codec_cloudevents)
# The json_schema codec's reader: the Confluent framing and its ids, then the envelope.
set(cppcdc_fuzz_json_schema_sources src/codec/json_schema/json_schema_codec.cpp)
set(cppcdc_fuzz_json_schema_libs cppcdc_codec_json_schema)
# The Protobuf codec's readers (bare messages, keys, the Confluent message-index array). The
# libFuzzer build instruments the codec's own source; libprotobuf and the classes protoc
# generated stay in the codec's library (the generated headers' directory is added below).
set(cppcdc_fuzz_protobuf_codec_sources src/codec/protobuf/protobuf_codec.cpp)
set(cppcdc_fuzz_protobuf_codec_libs cppcdc_codec_protobuf)
# The Glue framing's readers (the 18-byte header, zlib payloads, the UUID check against an
# in-memory registry) and, behind them, the avro codec's reader from its library.
set(cppcdc_fuzz_glue_frame_sources src/codec/glue/glue_frame.cpp src/codec/glue/glue_avro.cpp)
set(cppcdc_fuzz_glue_frame_libs cppcdc_codec_glue)
