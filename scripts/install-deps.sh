#!/usr/bin/env bash
# Install the Debian 12 packages that cppcdc's build, tests, fuzzing and demo need, the
# Apache Kafka jars the tests' broker runs (scripts/kafka.sh fetch: Maven Central, once) and
# the Debezium jars DebeziumOnBroker.* compares the debezium_json codec with
# (scripts/debezium-jars.sh --fetch: Maven Central, once) and the Apicurio Registry build the
# RealRegistry.* tests run (scripts/apicurio.sh fetch: Maven Central, once).
#
# Usage: scripts/install-deps.sh
#
# Safe to run again: when every package is already installed and the jars are cached the
# script returns in well under a second without touching apt or the network. Otherwise it runs
# `apt-get update`, checks that every package name has an installation candidate, and installs
# the missing ones. Needs root (only when something is missing).
set -euo pipefail
if (($#)); then
  case "$1" in
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "[install-deps] ERROR: unknown argument '$1': the script takes none (see --help)" >&2; exit 2 ;;
  esac
fi

log() { printf '[install-deps] %s\n' "$*"; }
die() { printf '[install-deps] ERROR: %s\n' "$*" >&2; exit 1; }

PACKAGES=(
  # toolchain
  build-essential g++ cmake ninja-build pkg-config ccache
  # clang 14 for the fuzz targets; libclang-rt-14-dev ships libclang_rt.fuzzer (libFuzzer)
  clang-14 libclang-rt-14-dev
  clang-format
  # PostgreSQL client library, server and tools for the integration tests and the demo
  libpq-dev postgresql-15 postgresql-client-15 postgresql-15-wal2json
  # MariaDB 10.11 server and Connector/C for the MySQL/MariaDB source (scripts/mariadb.sh)
  mariadb-server mariadb-client libmariadb-dev
  # Redis: hiredis for the "redis" checkpoint backend, the server for its tests
  # (scripts/redis.sh)
  libhiredis-dev redis-server
  # zstd (MySQL transaction payloads), zlib (MariaDB compressed events), ISA-L (binlog CRC32)
  libzstd-dev zlib1g-dev libisal-dev
  # GNU time, for the benchmark references' CPU and peak memory (bench/run.sh)
  time
  # Kafka: librdkafka for the sink; Java 17 and Maven run and fetch the test broker
  # (scripts/kafka.sh); confluent-kafka (the same librdkafka) reads back what the tests wrote
  librdkafka-dev openjdk-17-jre-headless maven python3-confluent-kafka
  # the real schema registry of the RealRegistry.* tests (scripts/apicurio.sh) is built from
  # Apicurio's jars with a small Java class: the JDK's compiler
  openjdk-17-jdk-headless
  # the Avro codec's tests decode what it wrote with an independent Avro implementation;
  # confluent-kafka's AvroDeserializer needs fastavro, which Debian 12 does not package:
  # pip fetches it from PyPI (fetch_fastavro below; python3-fastavro where Debian has it)
  python3-avro
  # the AWS Glue client's tests: the Glue double checks each request's Signature Version 4
  # with botocore (tests/unit/codec_glue/glue_double.py)
  python3-botocore
  # the JSON Schema codec's tests validate what it wrote with an independent JSON Schema
  # validator, and read it from the broker with confluent-kafka's schema registry client
  # (which needs requests) and JSONDeserializer
  python3-jsonschema python3-requests
  # the Protobuf codec: libprotobuf, protoc for the classes of its .proto files (build time),
  # libprotoc-dev for the headers of libprotobuf's .proto parser (it compares a registry's copy
  # of the schema with its own); its tests read what it wrote with Python's protobuf runtime
  libprotobuf-dev protobuf-compiler libprotoc-dev python3-protobuf
  # the CloudEvents codec's tests read what it wrote with the CNCF's CloudEvents Python SDK,
  # which Debian does not package: pip fetches it from PyPI (fetch_cloudevents_sdk below);
  # deprecation is its one dependency
  python3-pip python3-deprecation
  # libraries (DESIGN.md section 4)
  libboost-json1.81-dev libexpected-dev libtomlplusplus-dev libcli11-dev
  libspdlog-dev libfmt-dev libssl-dev
  # HTTP sink: libcurl (OpenSSL flavour) as the client; cpp-httplib serves the admin API
  # ([admin]: probes, /metrics) and the receivers in tests
  libcurl4-openssl-dev libcpp-httplib-dev
  # the admin tests scrape cppcdc with a real Prometheus; promtool checks the example rules
  prometheus
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # scripts
  git procps python3
  # scripts/pg-dist.sh: PostgreSQL 12 to 18 from the npm registry over HTTPS
  curl ca-certificates
  # scripts/package.sh (CPack's dpkg-shlibdeps step needs file; dpkg-dev comes with
  # build-essential) and its test (strace: the system calls against the unit's filter)
  file strace
)

# Packages that are not fully installed ("ii") yet.
missing_packages() {
  local installed
  installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PACKAGES[@]}" 2>/dev/null \
                | awk '$2 == "ii" { print $1 }' || true)
  local p
  for p in "${PACKAGES[@]}"; do
    if ! grep -qxF -- "$p" <<<"$installed"; then
      printf '%s\n' "$p"
    fi
  done
}

# The Kafka broker's jars (cached under ~/.cache/cppcdc/kafka; returns at once when they are).
fetch_kafka_jars() {
  "$(dirname "${BASH_SOURCE[0]}")/kafka.sh" fetch >/dev/null
}

# The CloudEvents Python SDK for the tests (tests/cloudevents_http.py, kafka_tool.py
# read-cloudevents), pinned, in a directory of its own (nothing of the system's Python changes).
CLOUDEVENTS_SDK_VERSION=1.11.0
CLOUDEVENTS_SDK_DIR="${HOME}/.cache/cppcdc/python/cloudevents-${CLOUDEVENTS_SDK_VERSION}"
fetch_cloudevents_sdk() {
  [[ -f "${CLOUDEVENTS_SDK_DIR}/cloudevents/__init__.py" ]] && return 0
  log "fetching the CloudEvents Python SDK ${CLOUDEVENTS_SDK_VERSION} from PyPI"
  rm -rf "${CLOUDEVENTS_SDK_DIR}.tmp"
  /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
    --target "${CLOUDEVENTS_SDK_DIR}.tmp" "cloudevents==${CLOUDEVENTS_SDK_VERSION}" &&
    mv "${CLOUDEVENTS_SDK_DIR}.tmp" "${CLOUDEVENTS_SDK_DIR}"
}

# fastavro for confluent-kafka's AvroDeserializer (tests/integration/kafka/avro_deserialize.py),
# pinned, in a directory of its own like the CloudEvents SDK; nothing to do when the system's
# Python has it (a python3-fastavro package).
FASTAVRO_VERSION=1.13.1
FASTAVRO_DIR="${HOME}/.cache/cppcdc/python/fastavro-${FASTAVRO_VERSION}"
fetch_fastavro() {
  /usr/bin/python3 -c 'import fastavro' 2>/dev/null && return 0
  [[ -f "${FASTAVRO_DIR}/fastavro/__init__.py" ]] && return 0
  log "fetching fastavro ${FASTAVRO_VERSION} from PyPI"
  rm -rf "${FASTAVRO_DIR}.tmp"
  /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps \
    --only-binary=:all: --target "${FASTAVRO_DIR}.tmp" "fastavro==${FASTAVRO_VERSION}" &&
    mv "${FASTAVRO_DIR}.tmp" "${FASTAVRO_DIR}"
}

# Debezium's PostgreSQL connector and a Kafka Connect worker (bench/debezium/pom.xml), the
# reference DebeziumOnBroker.* and bench/kafka_run.sh run (cached under
# ~/.cache/cppcdc/debezium; returns at once when they are).
fetch_debezium_jars() {
  "$(dirname "${BASH_SOURCE[0]}")/debezium-jars.sh" --fetch >/dev/null
}

# Apicurio Registry, built once by Maven from scripts/apicurio/pom.xml (cached under
# ~/.cache/cppcdc/apicurio; returns at once when it is).
fetch_apicurio() {
  "$(dirname "${BASH_SOURCE[0]}")/apicurio.sh" fetch >/dev/null
}

fetch_downloads() {
  fetch_kafka_jars || die "fetching the Kafka jars failed (see above)"
  fetch_debezium_jars || die "fetching the Debezium jars failed (see above)"
  fetch_apicurio || die "building Apicurio Registry with Maven failed (see above)"
  fetch_cloudevents_sdk || die "fetching the CloudEvents Python SDK from PyPI failed (see above)"
  fetch_fastavro || die "fetching fastavro from PyPI failed (see above)"
}

mapfile -t missing < <(missing_packages)
if ((${#missing[@]} == 0)); then
  fetch_downloads
  log "all ${#PACKAGES[@]} packages already installed; nothing to do"
  exit 0
fi

log "missing: ${missing[*]}"
((EUID == 0)) || die "installing packages needs root; rerun as root (e.g. sudo $0)"
command -v apt-get >/dev/null || die "apt-get not found: this script targets Debian 12"

# Other jobs may be using apt at the same time: wait for the lock instead of failing.
APT_OPTS=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3)

log "apt-get update"
apt-get "${APT_OPTS[@]}" update -q

# Every name must have an installation candidate; fail with a clear list if one does not.
unknown=()
for p in "${missing[@]}"; do
  cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ { print $2 }')
  if [[ -z "$cand" || "$cand" == "(none)" ]]; then
    unknown+=("$p")
  fi
done
((${#unknown[@]} == 0)) || die "no installation candidate for: ${unknown[*]}"

log "apt-get install ${missing[*]}"
DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" install -y -q --no-install-recommends "${missing[@]}"

mapfile -t still_missing < <(missing_packages)
((${#still_missing[@]} == 0)) || die "still not installed after apt-get: ${still_missing[*]}"
fetch_downloads
log "done: all ${#PACKAGES[@]} packages installed"
