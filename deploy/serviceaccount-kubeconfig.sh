#!/bin/sh
# serviceaccount-kubeconfig.sh ADMIN_KUBECONFIG OUT SERVER MANIFESTS
# aiosched's least-privilege identity for compose.yaml: with the cluster's admin kubeconfig,
# apply the ServiceAccount and RBAC of deploy/kubernetes (mounted at MANIFESTS), ask for a
# token for that ServiceAccount (TokenRequest, valid one year) and write a kubeconfig that
# holds only that token, for the API server at SERVER, to OUT (mode 644, atomically).
# Needs sh and kubectl only (the k3s image has both).
set -eu
admin=$1
out=$2
server=$3
manifests=$4
namespace=kube-system
account=aiosched

admin_kubectl() {
    kubectl --kubeconfig "$admin" --server "$server" "$@"
}

admin_kubectl apply -f "$manifests/serviceaccount.yaml" -f "$manifests/rbac.yaml"
token=$(admin_kubectl create token "$account" --namespace "$namespace" --duration 8760h)
ca=$(kubectl --kubeconfig "$admin" config view --raw --minify \
    -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
if [ -z "$token" ] || [ -z "$ca" ]; then
    echo "serviceaccount-kubeconfig: no token or no certificate authority in $admin" >&2
    exit 1
fi

tmp="$out.tmp.$$"
umask 022
cat >"$tmp" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: aiosched
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $account
  user:
    token: $token
contexts:
- name: aiosched
  context:
    cluster: aiosched
    user: $account
    namespace: $namespace
current-context: aiosched
KUBECONFIG
mv "$tmp" "$out"
echo "serviceaccount-kubeconfig: wrote $out (system:serviceaccount:$namespace:$account at $server)"
