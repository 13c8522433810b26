#!/bin/sh
# rewrite-kubeconfig.sh SRC DST HOST
# k3s writes its kubeconfig for https://127.0.0.1:6443, which inside any other container is that
# container itself. Write a copy whose server is https://HOST:6443 (the k3s service name; k3s's
# certificate covers it through --tls-san) for aiosched. Atomic, so a reader never sees half a file.
set -eu
src=$1
dst=$2
host=$3
tmp="$dst.tmp.$$"
sed "s#https://127\.0\.0\.1:6443#https://$host:6443#" "$src" >"$tmp"
if ! grep -q "server: https://$host:6443" "$tmp"; then
    echo "rewrite-kubeconfig: no https://127.0.0.1:6443 server in $src" >&2
    rm -f "$tmp"
    exit 1
fi
chmod 644 "$tmp"
mv "$tmp" "$dst"
echo "rewrite-kubeconfig: wrote $dst (server https://$host:6443)"
