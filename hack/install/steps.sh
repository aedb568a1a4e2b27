#!/usr/bin/env bash
# The install steps, the same on any cluster: `make test-install` runs them on the kit's one-node
# cluster (tests/install), hack/kind.sh on a kind cluster. Only creating the cluster and loading
# images differ. Every step is idempotent and waits, with a deadline, until what it made is Ready.
#
# Usage: hack/install/steps.sh STEP
#   kueue              Kueue with its own Helm chart (KUEUE_CHART), its manager configured to hand
#                      batch Jobs, AppWrappers and the sample kinds to kueue-bridge (kueue-values.yaml)
#   prereqs            the AppWrapper CRD (APPWRAPPER_CRD), the sample CRDs, a ClusterQueue and
#                      LocalQueue team-a/user-queue
#   helm-install       helm install kueue-bridge charts/kueue-bridge --set-file config=$CONFIG
#   helm-upgrade       the same with helm upgrade (CONFIG may name another file)
#   helm-uninstall     helm uninstall kueue-bridge
#   manifest-install FILE / manifest-uninstall FILE   a release manifest (make release-manifests)
#   kustomize-install DIR / kustomize-uninstall DIR   kubectl apply -k / delete -k
#   wait-ready         every kueue-bridge Deployment Available and the registered webhook
#                      configurations intercepting every configured kind
#
# Env: KUBECTL [kubectl]  HELM [helm]  KUBECONFIG
#   IMAGE [kueue-bridge:0.1.0]  IMAGE_PULL_POLICY [IfNotPresent]  CONFIG [hack/install/kueue-bridge.yaml]
#   VALUES  extra values files for our chart, space-separated (e.g. hack/install/small-node.yaml)
#   KUEUE_CHART [oci://registry.k8s.io/kueue/charts/kueue --version 0.19.2]  KUEUE_IMAGE
#   [registry.k8s.io/kueue/kueue:v0.19.2]  KUEUE_IMAGE_PULL_POLICY [IfNotPresent]
#   APPWRAPPER_CRD [the AppWrapper v1.1.2 release's CRD]  TIMEOUT [300] seconds per wait
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
KUBECTL="${KUBECTL:-kubectl}"
HELM="${HELM:-helm}"
IMAGE="${IMAGE:-kueue-bridge:0.1.0}"
IMAGE_PULL_POLICY="${IMAGE_PULL_POLICY:-IfNotPresent}"
CONFIG="${CONFIG:-$HERE/kueue-bridge.yaml}"
KUEUE_CHART="${KUEUE_CHART:-oci://registry.k8s.io/kueue/charts/kueue --version 0.19.2}"
KUEUE_IMAGE="${KUEUE_IMAGE:-registry.k8s.io/kueue/kueue:v0.19.2}"
KUEUE_IMAGE_PULL_POLICY="${KUEUE_IMAGE_PULL_POLICY:-IfNotPresent}"
APPWRAPPER_CRD="${APPWRAPPER_CRD:-https://raw.githubusercontent.com/project-codeflare/appwrapper/v1.1.2/config/crd/bases/workload.codeflare.dev_appwrappers.yaml}"
TIMEOUT="${TIMEOUT:-300}"
NS=kueue-bridge-system

log() { echo "[install] $*" >&2; }

values_args() {
  local file
  for file in ${VALUES:-}; do printf -- '-f\n%s\n' "$file"; done
}

helm_bridge() { # install|upgrade
  local -a extra
  mapfile -t extra < <(values_args)
  # shellcheck disable=SC2086
  "$HELM" "$1" kueue-bridge "$REPO/charts/kueue-bridge" -n "$NS" --create-namespace \
    --set-file config="$CONFIG" "${extra[@]}" \
    --set image.repository="${IMAGE%:*}",image.tag="${IMAGE##*:}",image.pullPolicy="$IMAGE_PULL_POLICY" \
    --wait --timeout "${TIMEOUT}s"
}

wait_available() {
  "$KUBECTL" -n "$NS" wait deployment -l app.kubernetes.io/part-of=kueue-bridge --for=condition=Available --timeout "${TIMEOUT}s" >&2
}

wait_ready() {
  wait_available
  # the webhook registers its configurations once every serving replica runs this configuration
  # (webhook.registration): wait until they intercept every configured kind (the chart's
  # post-install/post-upgrade hook runs the same command)
  "$KUBECTL" -n "$NS" exec deploy/kueue-bridge-webhook -- \
    kueue-bridge webhook wait-registered --config /etc/kueue-bridge/config.yaml --timeout "$TIMEOUT" >&2
}

unregister() { # first the webhook configurations, while the webhook still serves (the chart's pre-delete hook)
  "$KUBECTL" -n "$NS" exec deploy/kueue-bridge-webhook -- kueue-bridge webhook unregister >&2 || true
}

case "${1:-}" in
  kueue)
    # shellcheck disable=SC2086
    "$HELM" upgrade --install kueue $KUEUE_CHART -n kueue-system --create-namespace -f "$HERE/kueue-values.yaml" \
      --set controllerManager.manager.image.repository="${KUEUE_IMAGE%:*}" \
      --set controllerManager.manager.image.tag="${KUEUE_IMAGE##*:}" \
      --set controllerManager.manager.image.pullPolicy="$KUEUE_IMAGE_PULL_POLICY" \
      --wait --timeout "${TIMEOUT}s" >&2
    ;;
  prereqs)
    "$KUBECTL" apply --server-side -f "$APPWRAPPER_CRD" -f "$HERE/crds.yaml" >&2
    "$KUBECTL" wait --for=condition=Established crd/appwrappers.workload.codeflare.dev \
      crd/widgets.samples.kueue-bridge.dev crd/gadgets.samples.kueue-bridge.dev --timeout "${TIMEOUT}s" >&2
    # Kueue's webhook answers a few seconds after its pod is Ready: retry until it takes the queues
    deadline=$((SECONDS + TIMEOUT))
    until "$KUBECTL" apply --server-side -f "$HERE/queues.yaml" >&2; do
      if ((SECONDS > deadline)); then log "Kueue did not accept the queues in ${TIMEOUT}s"; exit 1; fi
      sleep 2
    done
    ;;
  # Helm returns once its post-install/post-upgrade hook saw the configured kinds intercepted
  helm-install) helm_bridge install >&2 && wait_available ;;
  helm-upgrade) helm_bridge upgrade >&2 && wait_available ;;
  helm-uninstall) "$HELM" uninstall kueue-bridge -n "$NS" --wait --timeout "${TIMEOUT}s" >&2 ;;
  manifest-install) "$KUBECTL" apply --server-side -f "$2" >&2 && wait_ready ;;
  manifest-uninstall) unregister && "$KUBECTL" delete --wait --ignore-not-found -f "$2" >&2 ;;
  kustomize-install) "$KUBECTL" apply --server-side -k "$2" >&2 && wait_ready ;;
  kustomize-uninstall) unregister && "$KUBECTL" delete --wait --ignore-not-found -k "$2" >&2 ;;
  wait-ready) wait_ready ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
