#!/usr/bin/env bash
# The demo: a local control plane, the Application CRD, a real Git repository made from
# sample-repo/, one sync, then a commit (one app's replicas changed, one app removed) and a second
# sync that shows the update and the prune; the shop's worker has no port and so no Service;
# the shop's migration task runs first, and the rest of the shop waits for it; the shop's config
# file edited in Git runs the migration again, then rolls its pods; team-web enforces the Pod
# Security Standard restricted and its Applications' pods are admitted;
# then hand edits undone in one pass, and a pass with nothing to do. Run it through `make demo`, which sets up .venv first.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DEMO=$(pwd)/.demo
STATE=$DEMO/cluster
rm -rf "$DEMO"
mkdir -p "$DEMO"

kubectl() { "$PY" -m tests.cluster kubectl --state-dir "$STATE" -- "$@"; }
if [ -t 1 ]; then step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }; else step() { printf '\n== %s\n' "$*"; }; fi
stop() { step "stopping the control plane"; "$PY" -m tests.cluster down --state-dir "$STATE"; }

step "starting the local control plane (built from Go modules; the first build takes a while)"
KUBECONFIG_FILE=$("$PY" -m tests.cluster up --state-dir "$STATE")
trap stop EXIT

step "installing the Application CRD"
kubectl apply -f crd.yaml
kubectl wait --for=condition=Established crd/applications.heumsi.github.io --timeout=60s

step "making a Git repository from sample-repo/"
REPO=$DEMO/repo
cp -r sample-repo "$REPO"
git -C "$REPO" init -q -b main
git -C "$REPO" -c user.name=Demo -c user.email=demo@example.com add -A
git -C "$REPO" -c user.name=Demo -c user.email=demo@example.com commit -q -m "Applications"
git -C "$REPO" log --oneline

step "team-web enforces the Pod Security Standard restricted: its Applications set spec.security"
kubectl create namespace team-web
kubectl label namespace team-web pod-security.kubernetes.io/enforce=restricted

sync() {
  step "python -m agent sync --once --repo $REPO"
  "$PY" -m agent sync --once --repo "$REPO" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$DEMO/cache"
}
wait_migration() {  # the fake node completes a Job's pod; the Job controller then marks the Job Complete
  kubectl -n team-shop wait --for=condition=Complete job -l heumsi.github.io/task=migrate --timeout=60s
}
sync
step "the shop's migration task (BeforeRollout) runs first: its ConfigMap and its Job exist, the rest of the shop is held"
kubectl -n team-shop get configmap,job,deploy -l app.kubernetes.io/instance=shop
kubectl -n team-shop get app shop -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}{"\n"}'
wait_migration
step "the migration completed: this pass rolls the shop out"
"$PY" -m agent sync --once --repo "$REPO" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$DEMO/cache" | tail -1
step "a few seconds later the fake node reports the pods ready: this pass records it in each Application's status"
sleep 3
"$PY" -m agent sync --once --repo "$REPO" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$DEMO/cache" | tail -1
kubectl get app,deploy,svc -A -l app.kubernetes.io/managed-by=gitops-agent
"$PY" -m agent get -n team-shop -o wide --kubeconfig "$KUBECONFIG_FILE"
step "team-web's pods are admitted: every container runs restricted (apps/team-web/web.yaml)"
kubectl -n team-web get pods -o custom-columns='POD:.metadata.name,USER:.spec.securityContext.runAsUser,NONROOT:.spec.securityContext.runAsNonRoot,SECCOMP:.spec.securityContext.seccompProfile.type,ESCALATION:.spec.containers[0].securityContext.allowPrivilegeEscalation,DROP:.spec.containers[0].securityContext.capabilities.drop'
step "the shop (apps/team-shop/shop.yaml) also has its config file, its Ingress, its autoscaler and a nightly report"
kubectl -n team-shop get configmap,ingress,hpa,cronjob -l app.kubernetes.io/managed-by=gitops-agent
kubectl -n team-shop get app shop -o jsonpath='{.status.health.status}: {.status.health.message}{"\n"}'
step "the shop's queue worker (apps/team-shop/orders-worker.yaml) has no port: a Deployment, no Service"
kubectl -n team-shop get deploy,svc -l app.kubernetes.io/instance=orders-worker
kubectl -n team-shop get app orders-worker -o jsonpath='{.status.health.status}: {.status.health.message}{"\n"}'

step "commit: frontend scaled to 3 replicas, redis removed"
sed -i '0,/replicas: 2/s//replicas: 3/' "$REPO/apps/team-web/web.yaml"  # the first one: frontend
git -C "$REPO" rm -q apps/team-data/redis.yaml
git -C "$REPO" -c user.name=Demo -c user.email=demo@example.com commit -q -am "Scale frontend, retire redis"
git -C "$REPO" show --stat --oneline HEAD
sync
step "one more pass a few seconds later records the new pods as ready in each Application's status"
sleep 3
"$PY" -m agent sync --once --repo "$REPO" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$DEMO/cache" | tail -1
kubectl get app,deploy,svc -A -l app.kubernetes.io/managed-by=gitops-agent

step "commit: the shop's config file changes; Kubernetes does not restart pods for a ConfigMap, the agent rolls them"
kubectl -n team-shop get replicasets -l app.kubernetes.io/instance=shop -o name
sed -i 's/currency: EUR/currency: USD/' "$REPO/apps/team-shop/shop.yaml"
git -C "$REPO" -c user.name=Demo -c user.email=demo@example.com commit -q -am "Shop: prices in USD"
sync
step "the migration sees the new file and runs first (a new Job: what it runs changed); the running pods keep the old file"
kubectl -n team-shop get job,replicasets -l app.kubernetes.io/instance=shop -o name
wait_migration
step "the migration completed: this pass rolls the shop's pods"
sync
kubectl -n team-shop get replicasets -l app.kubernetes.io/instance=shop -o name
"$PY" -m agent explain shop -n team-shop --kubeconfig "$KUBECONFIG_FILE" | sed -n '/^Tasks:/,/^$/p' || true

step "hand edits: kubectl patch adds a Service port and a sidecar; Git is the truth"
NS=$(kubectl get svc -A -l app.kubernetes.io/managed-by=gitops-agent -o jsonpath='{.items[0].metadata.namespace}')
NAME=$(kubectl get svc -A -l app.kubernetes.io/managed-by=gitops-agent -o jsonpath='{.items[0].metadata.name}')
kubectl -n "$NS" patch service "$NAME" -p '{"spec":{"ports":[{"name":"debug","port":9999,"targetPort":9999}]}}'
kubectl -n "$NS" patch deployment "$NAME" -p '{"spec":{"template":{"spec":{"containers":[{"name":"debug","image":"busybox"}]}}}}'
printf 'Service %s/%s ports after the hand edit: ' "$NS" "$NAME"
kubectl -n "$NS" get service "$NAME" -o jsonpath='{range .spec.ports[*]}{.name}:{.port} {end}{"\n"}'
sync
printf 'Service %s/%s ports after the pass: ' "$NS" "$NAME"
kubectl -n "$NS" get service "$NAME" -o jsonpath='{range .spec.ports[*]}{.name}:{.port} {end}{"\n"}'
step "the pass after that has nothing to do (--exit-code: 0 means in sync)"
"$PY" -m agent sync --once --exit-code --repo "$REPO" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$DEMO/cache" | tail -1
