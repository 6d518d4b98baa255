#!/usr/bin/env bash
# Builds the control-plane binaries kcontrol tests and benchmarks against, from Go modules, into a
# per-version cache directory outside the repository, and prints that directory.
#
#   hack/build-k8s.sh                       # etcd, kube-apiserver, kubectl
#   hack/build-k8s.sh kube-controller-manager   # any subset, by name
#   hack/build-k8s.sh cluster               # everything the test cluster runs (adds kube-scheduler,
#                                           # kube-controller-manager and kwok), and promtool,
#                                           # which the tests of deploy/prometheus/ run
#   hack/build-k8s.sh kwokctl               # kwok's cluster tool, for bench/kwokctl only
#
# kwok is not part of k8s.io/kubernetes: it is installed from its own module
# (sigs.k8s.io/kwok@$KWOK_VERSION, with the dependencies kwok pins) into its own cache directory
# beside the Kubernetes binaries, which links it so that one directory holds every binary.
# promtool likewise, from github.com/prometheus/prometheus@$PROMTOOL_VERSION (the module's
# v0.3XX.Y is Prometheus v3.XX.Y), built without the service discoveries (`remove_all_sd`):
# checking and unit-testing rules needs none, and leaving them out halves the build.
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

kwok_version=${KWOK_VERSION:-v0.8.0}
kwok_dir="$cache_root/kwok/$kwok_version"

promtool_version=${PROMTOOL_VERSION:-v0.316.0}
promtool_dir="$cache_root/promtool/$promtool_version"

targets=()
for arg in "$@"; do
  case "$arg" in
    cluster) targets+=(etcd kube-apiserver kubectl kube-scheduler kube-controller-manager kwok promtool) ;;
    *) targets+=("$arg") ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(etcd kube-apiserver kubectl)

package_of() {
  case "$1" in
    etcd) echo "./etcd" ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl) echo "k8s.io/kubernetes/cmd/$1" ;;
    kwok) echo "sigs.k8s.io/kwok/cmd/kwok@$kwok_version" ;;
    kwokctl) echo "sigs.k8s.io/kwok/cmd/kwokctl@$kwok_version" ;;
    promtool) echo "github.com/prometheus/prometheus/cmd/promtool@$promtool_version" ;;
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
total_start=$SECONDS
built=0
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
  start=$SECONDS
  if [ "$name" = kwok ] || [ "$name" = kwokctl ]; then
    # `go install pkg@version` builds with kwok's own go.mod, outside the wrapper module.
    if [ ! -x "$kwok_dir/$name" ]; then
      echo "building $name $kwok_version into $kwok_dir (a cold build takes several minutes)" >&2
      mkdir -p "$kwok_dir"
      (cd "$kwok_dir" && GOFLAGS= GOBIN="$kwok_dir/.bin" go install -trimpath -ldflags "-s -w" "$pkg")
      mv "$kwok_dir/.bin/$name" "$kwok_dir/$name" && rmdir "$kwok_dir/.bin"
    fi
    ln -sf "$kwok_dir/$name" "$out_dir/$name"
  elif [ "$name" = promtool ]; then
    # As kwok: with Prometheus's own go.mod, into a cache directory of its own.
    if [ ! -x "$promtool_dir/promtool" ]; then
      echo "building promtool $promtool_version into $promtool_dir (a cold build takes several minutes)" >&2
      mkdir -p "$promtool_dir"
      (cd "$promtool_dir" && GOFLAGS= GOBIN="$promtool_dir/.bin" \
        go install -trimpath -tags remove_all_sd \
        -ldflags "-s -w -X github.com/prometheus/common/version.Version=3.${promtool_version#v0.3}" \
        "$pkg")
      mv "$promtool_dir/.bin/promtool" "$promtool_dir/promtool" && rmdir "$promtool_dir/.bin"
    fi
    ln -sf "$promtool_dir/promtool" "$out_dir/promtool"
  else
    echo "building $name $k8s_version into $out_dir (a cold build takes several minutes)" >&2
    (cd "$module_dir" && go build -trimpath -ldflags "-s -w $stamp" -o "$out_dir/$name.tmp" "$pkg")
    mv "$out_dir/$name.tmp" "$out_dir/$name"
  fi
  echo "built $name in $((SECONDS - start)) s" >&2
  built=$((built + 1))
done
if [ "$built" -gt 0 ]; then
  echo "built $built binaries in $((SECONDS - total_start)) s (Go caches: $(go env GOCACHE), $(go env GOMODCACHE))" >&2
fi
echo "$out_dir"
