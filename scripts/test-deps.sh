#!/usr/bin/env bash
# System packages the test suite needs beyond Go, Python, git, openssl and make:
# - an OpenSSH server (the ssh:// repository test runs its own sshd on loopback);
# - Debian's chromium (the status page's browser tests drive it headless through the playwright
#   Python package, launched with executable_path=/usr/bin/chromium: no browser download);
# - mmdebstrap and runc (make image builds the agent's image from Debian's packages with
#   mmdebstrap; tests/test_image.py runs it with runc), and skopeo (the test reads the image's
#   archive with the library podman load uses).
# `scripts/test-deps.sh image` checks only the last two (what make image needs).
# Installs what is missing with apt-get when this runs as root; otherwise says what to install.
set -euo pipefail
missing=()
if [ "${1:-}" != image ]; then
  [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  command -v skopeo >/dev/null || missing+=(skopeo)  # tests/test_image.py reads the archive as podman load does
fi
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v runc >/dev/null || [ -x /usr/sbin/runc ] || missing+=(runc)
if [ ${#missing[@]} = 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing ${missing[*]} (what the tests and make image need; see the top of this script)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "note: missing ${missing[*]}; install them, or the ssh://, browser and image tests are skipped" \
       "(with CI set, the browser and image tests fail instead)" >&2
fi
