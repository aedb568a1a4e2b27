#!/usr/bin/env bash
# Try kueue-bridge on a kind cluster (Docker, kind, helm and kubectl on PATH): create the cluster,
# build and load our image, install Kueue v0.19.2 with its own Helm chart, install our chart and run
# the samples. The install steps are hack/install/steps.sh, the ones `make test-install` runs on the
# kit's one-node cluster; only creating the cluster and loading the image differ.
#
# Usage: hack/kind.sh            (or: make kind)
# Env: KIND_CLUSTER [kueue-bridge]  IMAGE [kueue-bridge:dev]  KEEP_CLUSTER [1: leave it running]
#      and hack/install/steps.sh's (KUEUE_CHART, APPWRAPPER_CRD, CONFIG, VALUES, TIMEOUT, ...)
# Delete it afterwards: kind delete cluster --name kueue-bridge
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
KIND_CLUSTER="${KIND_CLUSTER:-kueue-bridge}"
export IMAGE="${IMAGE:-kueue-bridge:dev}" IMAGE_PULL_POLICY=IfNotPresent
STEPS="$REPO/hack/install/steps.sh"

for tool in docker kind helm kubectl; do
  command -v "$tool" >/dev/null || { echo "hack/kind.sh needs $tool on PATH" >&2; exit 1; }
done

# 1. the cluster (the only step that differs from make test-install)
kind get clusters | grep -qx "$KIND_CLUSTER" || kind create cluster --name "$KIND_CLUSTER" --wait 120s
kubectl config use-context "kind-$KIND_CLUSTER"

# 2. our image, built and loaded into the node (Kueue's comes from registry.k8s.io)
docker build -f "$REPO/deploy/Dockerfile" --build-arg GIT_COMMIT="$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)" \
  -t "$IMAGE" "$REPO"
kind load docker-image "$IMAGE" --name "$KIND_CLUSTER"

# 3. Kueue with its chart, the CRDs and queues, kueue-bridge with its chart
"$STEPS" kueue
"$STEPS" prereqs
"$STEPS" helm-install

# 4. the sample: a queued Job, suspended by our webhook, admitted by Kueue, started and finished
sed 's#localhost/real-cluster/busybox:1.35#busybox:1.36#' "$REPO/hack/install/sample-job.yaml" | kubectl create -f -
kubectl -n team-a wait job -l kueue.x-k8s.io/queue-name=user-queue --for=condition=Complete --timeout=300s
kubectl -n team-a get jobs,workloads
echo "kueue-bridge is running on kind cluster $KIND_CLUSTER (kind delete cluster --name $KIND_CLUSTER)"
