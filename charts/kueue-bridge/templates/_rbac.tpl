{{/*
Every identity's RBAC rules for the configuration: shared.component_access.access_rules, rule for
rule (a rule per kind where Python groups kinds by API group: the same grants). Each rule has a
"scope": cluster (ClusterRole), own (Role in the release namespace), kueue (Role in Kueue's).
Call with (list $root "webhook"|"reconciler"|"multikueue"|"appwrapper"|"kueue"); returns YAML.
*/}}
{{- define "kueue-bridge.rules" -}}
{{- $root := index . 0 -}}
{{- $identity := index . 1 -}}
{{- $cfg := include "kueue-bridge.config" $root | fromJson -}}
{{- $kinds := include "kueue-bridge.kinds" $root | fromJson -}}
{{- $tables := $root.Files.Get "files/kinds.yaml" | fromYaml -}}
{{- $read := list "get" "list" "watch" -}}
{{- $rules := list -}}
{{- $startUp := list
  (dict "apiGroups" (list "apps") "resources" (list "deployments") "verbs" (list "list") "scope" "cluster")
  (dict "apiGroups" (list "") "resources" (list "configmaps") "verbs" (list "get") "scope" "kueue")
  (dict "apiGroups" (list "admissionregistration.k8s.io") "resources" (list "mutatingwebhookconfigurations") "verbs" (list "list") "scope" "cluster") -}}
{{- $managedKeys := dict -}}
{{- range $kinds.managed }}{{ $_ := set $managedKeys (printf "%s/%s" .group .kind) true }}{{ end -}}
{{- $lease := dict "apiGroups" (list "coordination.k8s.io") "resources" (list "leases") "verbs" (list "get" "create" "update") "scope" "own" -}}
{{- $events := list
  (dict "apiGroups" (list "") "resources" (list "events") "verbs" (list "create" "patch") "scope" "cluster")
  (dict "apiGroups" (list "events.k8s.io") "resources" (list "events") "verbs" (list "create" "patch") "scope" "cluster") -}}
{{- if eq $identity "webhook" -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "namespaces") "verbs" $read "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "kueue.x-k8s.io") "resources" (list "localqueues" "clusterqueues" "admissionchecks" "workloadpriorityclasses") "verbs" $read "scope" "cluster") -}}
{{- range $kinds.managed }}{{ $rules = append $rules (dict "apiGroups" (list .group) "resources" (list .resource) "verbs" $read "scope" "cluster") }}{{ end -}}
{{- $rules = append $rules (dict "apiGroups" (list "apps") "resources" (list "replicasets") "verbs" $read "scope" "cluster") -}}
{{- range $tables.kueueIntegrations -}}
{{- if not (hasKey $managedKeys (printf "%s/%s" .group .kind)) -}}
{{- $rules = append $rules (dict "apiGroups" (list .group) "resources" (list .resource) "verbs" $read "scope" "cluster") -}}
{{- end -}}
{{- end -}}
{{- $configurations := list "mutatingwebhookconfigurations" "validatingwebhookconfigurations" -}}
{{- $rules = append $rules (dict "apiGroups" (list "admissionregistration.k8s.io") "resources" $configurations "verbs" (list "get" "update" "patch" "delete") "resourceNames" (list "kueue-bridge-mutating-webhook-configuration" "kueue-bridge-validating-webhook-configuration") "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "admissionregistration.k8s.io") "resources" $configurations "verbs" (list "create") "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "rbac.authorization.k8s.io") "resources" (list "clusterroles") "verbs" (list "get") "resourceNames" (list "kueue-bridge-webhook") "scope" "cluster") -}}
{{- $rules = concat $rules $startUp -}}
{{- $rules = append $rules (dict "apiGroups" (list "discovery.k8s.io") "resources" (list "endpointslices") "verbs" (list "list") "scope" "own") -}}
{{- if $cfg.icm -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "secrets") "verbs" (list "get" "update") "resourceNames" (list $cfg.secretName) "scope" "own") -}}
{{- end -}}
{{- if $kinds.appwrappers -}}
{{- $rules = append $rules (dict "apiGroups" (list "authorization.k8s.io") "resources" (list "subjectaccessreviews") "verbs" (list "create") "scope" "cluster") -}}
{{- end -}}
{{- else if eq $identity "reconciler" -}}
{{- range $kinds.managed -}}
{{- $rules = append $rules (dict "apiGroups" (list .group) "resources" (list .resource) "verbs" (list "get" "list" "watch" "update" "patch" "delete") "scope" "cluster") -}}
{{- end -}}
{{- range $kinds.managed -}}
{{- if or (eq .builtin "batch/job") (eq .builtin "") -}}
{{- $rules = append $rules (dict "apiGroups" (list .group) "resources" (list (printf "%s/status" .resource)) "verbs" (list "get" "update" "patch") "scope" "cluster") -}}
{{- end -}}
{{- end -}}
{{- $rules = append $rules (dict "apiGroups" (list "kueue.x-k8s.io") "resources" (list "workloads") "verbs" (list "get" "list" "watch" "create" "update" "patch" "delete") "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "kueue.x-k8s.io") "resources" (list "workloads/status") "verbs" (list "get" "update" "patch") "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "kueue.x-k8s.io") "resources" (list "workloads/finalizers") "verbs" (list "update") "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "kueue.x-k8s.io") "resources" (list "resourceflavors" "workloadpriorityclasses") "verbs" $read "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "scheduling.k8s.io") "resources" (list "priorityclasses") "verbs" $read "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "namespaces") "verbs" $read "scope" "cluster") -}}
{{- $rules = concat $rules $events -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "pods") "verbs" (list "get") "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "apps") "resources" (list "replicasets") "verbs" (list "get") "scope" "cluster") -}}
{{- range $tables.kueueIntegrations -}}
{{- if and .group (not (hasKey $managedKeys (printf "%s/%s" .group .kind))) -}}
{{- $rules = append $rules (dict "apiGroups" (list .group) "resources" (list .resource) "verbs" (list "get") "scope" "cluster") -}}
{{- end -}}
{{- end -}}
{{- $rules = append $rules $lease -}}
{{- $rules = concat $rules $startUp -}}
{{- else if eq $identity "multikueue" -}}
{{- $rules = append $rules (dict "apiGroups" (list "kueue.x-k8s.io") "resources" (list "admissionchecks" "multikueueconfigs" "multikueueclusters" "workloads") "verbs" $read "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "kueue.x-k8s.io") "resources" (list "admissionchecks/status" "multikueueclusters/status") "verbs" (list "update") "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "kueue.x-k8s.io") "resources" (list "workloads/status") "verbs" (list "patch") "scope" "cluster") -}}
{{- range $kinds.multikueue }}{{ $rules = append $rules (dict "apiGroups" (list .group) "resources" (list .resource) "verbs" $read "scope" "cluster") }}{{ end -}}
{{- range $kinds.multikueue }}{{ $rules = append $rules (dict "apiGroups" (list .group) "resources" (list (printf "%s/status" .resource)) "verbs" (list "patch") "scope" "cluster") }}{{ end -}}
{{- $rules = concat $rules $events -}}
{{- $rules = append $rules $lease -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "secrets") "verbs" $read "scope" "own") -}}
{{- $rules = concat $rules $startUp -}}
{{- else if eq $identity "appwrapper" -}}
{{- if $kinds.appwrappers -}}
{{- $g := "workload.codeflare.dev" -}}
{{- $rules = append $rules (dict "apiGroups" (list $g) "resources" (list "appwrappers") "verbs" (list "get" "list" "watch" "patch") "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list $g) "resources" (list "appwrappers/status") "verbs" (list "get" "update" "patch") "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list $g) "resources" (list "appwrappers/finalizers") "verbs" (list "update") "scope" "cluster") -}}
{{- $rules = concat $rules $events -}}
{{- $gcd := list "get" "create" "delete" -}}
{{- $informed := list "get" "list" "watch" "create" "delete" -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "pods") "verbs" $informed "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "services" "configmaps") "verbs" $gcd "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "apps") "resources" (list "deployments" "statefulsets") "verbs" $gcd "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "batch") "resources" (list "jobs") "verbs" $informed "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "jobset.x-k8s.io") "resources" (list "jobsets") "verbs" $gcd "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "kubeflow.org") "resources" (list "pytorchjobs") "verbs" $gcd "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "ray.io") "resources" (list "rayclusters" "rayjobs") "verbs" $gcd "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "scheduling.sigs.k8s.io") "resources" (list "podgroups") "verbs" $gcd "scope" "cluster") -}}
{{- $rules = append $rules (dict "apiGroups" (list "scheduling.x-k8s.io") "resources" (list "podgroups") "verbs" $gcd "scope" "cluster") -}}
{{- $rules = append $rules $lease -}}
{{- $rules = concat $rules $startUp -}}
{{- end -}}
{{- else if eq $identity "kueue" -}}
{{- $kueueKinds := dict -}}
{{- range $tables.kueueIntegrations }}{{ $_ := set $kueueKinds (printf "%s/%s" .group .kind) true }}{{ end -}}
{{- range $kinds.managed -}}
{{- if not (hasKey $kueueKinds (printf "%s/%s" .group .kind)) -}}
{{- $rules = append $rules (dict "apiGroups" (list .group) "resources" (list .resource) "verbs" $read "scope" "cluster") -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "rules" $rules) -}}
{{- end }}
