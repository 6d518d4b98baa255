#!/usr/bin/env bash
# Builds the control-plane binaries kcontrol tests and benchmarks against, from Go modules, into a
# per-version cache directory outside the repository, and prints that directory.
#
#   hack/build-k8s.sh                       # etcd, kube-apiserver, kubectl
#   hack/build-k8s.sh kube-controller-manager   # any subset, by name
#
# A binary already present in the cache is not rebuilt. Ready binaries are taken from
# $KCONTROL_ASSETS or $KUBEBUILDER_ASSETS (controller-runtime's convention) when they hold them.
# The Go module and build caches (GOMODCACHE, GOCACHE) make a second build of anything cheap.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module_dir="$here/k8s"
k8s_version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$module_dir/go.mod")
cache_root=${KCONTROL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kcontrol}
out_dir="$cache_root/k8s/$k8s_version"

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(etcd kube-apiserver kubectl)

package_of() {
  case "$1" in
    etcd) echo "./etcd" ;;
    kube-apiserver|kube-controller-manager|kubectl) echo "k8s.io/kubernetes/cmd/$1" ;;
    *) echo "unknown binary: $1" >&2; return 1 ;;
  esac
}

ready_asset() {
  local name=$1 dir
  for dir in "${KCONTROL_ASSETS:-}" "${KUBEBUILDER_ASSETS:-}"; do
    if [ -n "$dir" ] && [ -x "$dir/$name" ]; then echo "$dir/$name"; return 0; fi
  done
  return 1
}

# The version stamp kube-apiserver and kubectl report (`kubectl version`, /version).
minor=${k8s_version#v1.}; minor=${minor%%.*}
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

mkdir -p "$out_dir"
# sum.golang.org may be unreachable: the committed go.sum is the source of truth.
export GOSUMDB=${GOSUMDB:-off} GOFLAGS="${GOFLAGS:-} -mod=mod" CGO_ENABLED=${CGO_ENABLED:-0}
for name in "${targets[@]}"; do
  pkg=$(package_of "$name")
  if [ -x "$out_dir/$name" ]; then continue; fi
  if asset=$(ready_asset "$name"); then
    ln -sf "$asset" "$out_dir/$name"
    echo "using $asset" >&2
    continue
  fi
  echo "building $name $k8s_version into $out_dir (a cold build takes several minutes)" >&2
  start=$SECONDS
  (cd "$module_dir" && go build -trimpath -ldflags "-s -w $stamp" -o "$out_dir/$name.tmp" "$pkg")
  mv "$out_dir/$name.tmp" "$out_dir/$name"
  echo "built $name in $((SECONDS - start)) s" >&2
done
echo "$out_dir"
