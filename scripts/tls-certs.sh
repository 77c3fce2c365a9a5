#!/usr/bin/env bash
# Throwaway certificates for TLS tests (and for trying TLS by hand): a self-signed CA, a server
# certificate for `localhost` signed by it, and client certificates for certificate
# authentication. Nothing made here is fit for production.
#
# Usage: scripts/tls-certs.sh DIR [CLIENT_CN ...]
#   DIR/ca.key DIR/ca.crt          a new self-signed CA (every run makes a different one)
#   DIR/server.key DIR/server.crt  CN and subjectAltName DNS:localhost only (so a client that
#                                  verifies the host name accepts `localhost`, not 127.0.0.1)
#   DIR/CN.key DIR/CN.crt          one client certificate per CLIENT_CN (PostgreSQL's `cert`
#                                  authentication maps the CN to the role of that name)
# Keys are EC P-256 and mode 0600. With TLS_KEY_PASSPHRASE set in the environment, client
# keys are encrypted with it (libpq's `sslpassword`). Needs the openssl command.
set -euo pipefail

die() { printf '[tls-certs] ERROR: %s\n' "$*" >&2; exit 1; }

(($# >= 1)) || { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2; exit 2; }
command -v openssl >/dev/null || die "openssl not found"
DIR=$1
shift
mkdir -p "$DIR"
cd "$DIR"
umask 077

DAYS=30
KEY=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)

# A CA of its own for every run: two runs never trust each other's certificates.
openssl req -x509 "${KEY[@]}" -nodes -keyout ca.key -out ca.crt -days "$DAYS" \
  -subj "/CN=cppcdc test CA $(date +%s%N)" 2>/dev/null || die "could not make the CA"

# sign NAME EXTENSIONS: NAME.csr -> NAME.crt, signed by the CA
sign() {
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 8)" \
    -days "$DAYS" -out "$1.crt" -extfile <(printf '%s\n' "$2") 2>/dev/null \
    || die "could not sign $1.crt"
  rm -f "$1.csr"
}

openssl req -new "${KEY[@]}" -nodes -keyout server.key -out server.csr -subj "/CN=localhost" \
  2>/dev/null || die "could not make the server key"
sign server "$(printf '%s\n' 'basicConstraints=CA:FALSE' 'keyUsage=digitalSignature,keyEncipherment' \
  'extendedKeyUsage=serverAuth' 'subjectAltName=DNS:localhost')"

for cn in "$@"; do
  [[ "$cn" =~ ^[A-Za-z0-9_]+$ ]] || die "client CN '$cn': use letters, digits and _"
  if [[ -n "${TLS_KEY_PASSPHRASE:-}" ]]; then
    openssl req -new "${KEY[@]}" -passout env:TLS_KEY_PASSPHRASE -keyout "$cn.key" \
      -out "$cn.csr" -subj "/CN=$cn" 2>/dev/null || die "could not make the key of $cn"
  else
    openssl req -new "${KEY[@]}" -nodes -keyout "$cn.key" -out "$cn.csr" -subj "/CN=$cn" \
      2>/dev/null || die "could not make the key of $cn"
  fi
  sign "$cn" "$(printf '%s\n' 'basicConstraints=CA:FALSE' 'keyUsage=digitalSignature' \
    'extendedKeyUsage=clientAuth')"
done
chmod 0600 ./*.key
printf '%s\n' "$PWD"
