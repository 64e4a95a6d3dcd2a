#!/usr/bin/env bash
# System packages the test suite needs beyond Go, Python, git, openssl and make: an OpenSSH
# server (the ssh:// repository test runs its own sshd on loopback). Installs it with apt-get
# when it is missing and this runs as root; otherwise says what to install.
set -euo pipefail
if [ -x /usr/sbin/sshd ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing openssh-server for the ssh:// repository test"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null
else
  echo "note: /usr/sbin/sshd is missing; install openssh-server, or the ssh:// test is skipped" >&2
fi
