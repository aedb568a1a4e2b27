{{/*
kueue-bridge chart helpers. The configuration (.Values.config) is parsed once per template with
"kueue-bridge.config"; the kinds it manages and syncs, and every identity's RBAC rules, are derived
from it here, as shared.component_access derives them for `kueue-bridge manifests` (the tables in
files/kinds.yaml are generated from the same Python tables; tests/unit/chart compares the rules).
*/}}

{{- define "kueue-bridge.labels" -}}
app.kubernetes.io/part-of: kueue-bridge
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "kueue-bridge.selectorLabels" -}}
app.kubernetes.io/name: kueue-bridge
app.kubernetes.io/component: {{ . }}
{{- end }}

{{- define "kueue-bridge.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The parsed configuration as JSON, checked for what the chart depends on. */}}
{{- define "kueue-bridge.config" -}}
{{- $cfg := fromYaml .Values.config -}}
{{- if hasKey $cfg "Error" -}}
{{- fail (printf "config: not YAML: %s" (get $cfg "Error")) -}}
{{- end -}}
{{- if ne (get $cfg "kind" | default "") "Configuration" -}}
{{- fail "config: must be a kueue-bridge configuration file (apiVersion config.kueue.x-k8s.io/v1beta2, kind Configuration); pass it with --set-file config=FILE" -}}
{{- end -}}
{{- $ns := get $cfg "namespace" | default "kueue-system" -}}
{{- if ne $ns .Release.Namespace -}}
{{- fail (printf "config: namespace is %q but the release is installed into %q; set one to the other (helm install -n %s, or namespace: %s in the file)" $ns .Release.Namespace $ns .Release.Namespace) -}}
{{- end -}}
{{- $icm := get $cfg "internalCertManagement" | default dict -}}
{{- $icmEnabled := true -}}
{{- if hasKey $icm "enable" }}{{ $icmEnabled = get $icm "enable" }}{{ end -}}
{{- if and $icmEnabled .Values.certManager.enabled -}}
{{- fail "certManager.enabled needs internalCertManagement.enable: false in config (one of them issues the webhook's certificates)" -}}
{{- end -}}
{{- $webhook := get $cfg "webhook" | default dict -}}
{{- $health := get $cfg "health" | default dict -}}
{{- $probe := get $health "healthProbeBindAddress" | default ":8081" -}}
{{- $gates := get $cfg "featureGates" | default dict -}}
{{- $mkGate := true -}}
{{- if hasKey $gates "MultiKueueAdaptersForCustomJobs" }}{{ $mkGate = get $gates "MultiKueueAdaptersForCustomJobs" }}{{ end -}}
{{- dict
  "namespace" $ns
  "icm" $icmEnabled
  "serviceName" (get $icm "webhookServiceName" | default "kueue-bridge-webhook-service")
  "secretName" (get $icm "webhookSecretName" | default "kueue-bridge-webhook-server-cert")
  "webhookPort" (get $webhook "port" | default 9443 | int)
  "certDir" (get $webhook "certDir" | default "/tmp/k8s-webhook-server/serving-certs")
  "probePort" (regexReplaceAll "^.*:" (toString $probe) "" | default "8081" | int)
  "integrations" (get $cfg "integrations" | default dict)
  "multiKueue" (get $cfg "multiKueue" | default dict)
  "mkGate" $mkGate
  | toJson -}}
{{- end }}

{{/* apimachinery's UnsafeGuessKindToResource (shared.kube.gvk.guess_plural) */}}
{{- define "kueue-bridge.guessPlural" -}}
{{- $singular := lower . -}}
{{- if hasSuffix "s" $singular -}}{{ $singular }}es
{{- else if hasSuffix "y" $singular -}}{{ trimSuffix "y" $singular }}ies
{{- else -}}{{ $singular }}s
{{- end -}}
{{- end }}

{{/* "Kind.version.group" -> {kind, version, group} */}}
{{- define "kueue-bridge.parseKindArg" -}}
{{- $parts := splitList "." . -}}
{{- if lt (len $parts) 2 }}{{ fail (printf "config: %q is not Kind.version.group" .) }}{{ end -}}
{{- dict "kind" (index $parts 0) "version" (index $parts 1) "group" (slice $parts 2 | join ".") | toJson -}}
{{- end }}

{{/*
The kinds: {"managed": [...], "multikueue": [...], "appwrappers": bool}, each kind
{group, version, kind, resource, builtin (framework name or "")}: Configuration.managed_kinds() and
multikueue_kinds().
*/}}
{{- define "kueue-bridge.kinds" -}}
{{- $cfg := include "kueue-bridge.config" . | fromJson -}}
{{- $tables := .Files.Get "files/kinds.yaml" | fromYaml -}}
{{- $byGVK := dict -}}
{{- range $name, $b := $tables.builtinKinds -}}
{{- $_ := set $byGVK (printf "%s/%s/%s" $b.group $b.version $b.kind) $name -}}
{{- end -}}
{{- $managed := list -}}
{{- $seen := dict -}}
{{- range ($cfg.integrations.frameworks | default list) -}}
{{- $b := get $tables.builtinKinds . -}}
{{- if not $b }}{{ fail (printf "config: integrations.frameworks: %q has no kueue-bridge adapter (built-in: %s)" . (keys $tables.builtinKinds | sortAlpha | join ", ")) }}{{ end -}}
{{- $key := printf "%s/%s/%s" $b.group $b.version $b.kind -}}
{{- if not (hasKey $seen $key) -}}
{{- $_ := set $seen $key true -}}
{{- $managed = append $managed (dict "group" $b.group "version" $b.version "kind" $b.kind "resource" $b.resource "builtin" .) -}}
{{- end -}}
{{- end -}}
{{- range ($cfg.integrations.externalFrameworks | default list) -}}
{{- $name := . -}}
{{- $resource := "" -}}
{{- if kindIs "map" . }}{{ $name = .name }}{{ $resource = .resource | default "" }}{{ end -}}
{{- $gvk := include "kueue-bridge.parseKindArg" $name | fromJson -}}
{{- if not $resource }}{{ $resource = include "kueue-bridge.guessPlural" $gvk.kind }}{{ end -}}
{{- $key := printf "%s/%s/%s" $gvk.group $gvk.version $gvk.kind -}}
{{- if not (hasKey $seen $key) -}}
{{- $_ := set $seen $key true -}}
{{- $managed = append $managed (dict "group" $gvk.group "version" $gvk.version "kind" $gvk.kind "resource" $resource "builtin" (get $byGVK $key | default "")) -}}
{{- end -}}
{{- end -}}
{{- $synced := list -}}
{{- $syncedSeen := dict -}}
{{- range $managed -}}
{{- if .builtin -}}
{{- $synced = append $synced . -}}
{{- $_ := set $syncedSeen (printf "%s/%s/%s" .group .version .kind) true -}}
{{- end -}}
{{- end -}}
{{- if $cfg.mkGate -}}
{{- range ($cfg.multiKueue.externalFrameworks | default list) -}}
{{- $name := . -}}
{{- if kindIs "map" . }}{{ $name = .name }}{{ end -}}
{{- $gvk := include "kueue-bridge.parseKindArg" $name | fromJson -}}
{{- $key := printf "%s/%s/%s" $gvk.group $gvk.version $gvk.kind -}}
{{- if not (hasKey $syncedSeen $key) -}}
{{- $_ := set $syncedSeen $key true -}}
{{- $entry := dict "group" $gvk.group "version" $gvk.version "kind" $gvk.kind "resource" (include "kueue-bridge.guessPlural" $gvk.kind) "builtin" "" -}}
{{- range $managed }}{{ if and (not .builtin) (eq (printf "%s/%s/%s" .group .version .kind) $key) }}{{ $entry = . }}{{ end }}{{ end -}}
{{- $synced = append $synced $entry -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $appwrappers := false -}}
{{- range $managed }}{{ if and (eq .group "workload.codeflare.dev") (eq .kind "AppWrapper") }}{{ $appwrappers = true }}{{ end }}{{ end -}}
{{- dict "managed" $managed "multikueue" $synced "appwrappers" $appwrappers | toJson -}}
{{- end }}

{{/* Is a component deployed? (appwrapper: only when AppWrappers are managed) */}}
{{- define "kueue-bridge.componentEnabled" -}}
{{- $root := index . 0 -}}{{- $component := index . 1 -}}
{{- $values := get $root.Values $component -}}
{{- if and $values.enabled (or (ne $component "appwrapper") (include "kueue-bridge.kinds" $root | fromJson).appwrappers) -}}true{{- end -}}
{{- end }}
