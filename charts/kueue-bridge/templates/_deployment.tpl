{{/*
One component's Deployment and PodDisruptionBudget. Call with (dict "root" $ "component" NAME
"args" LIST "ports" LIST "probes" DICT "extraMounts" LIST "extraVolumes" LIST). Pods run as
65532 (the image's user) with fsGroup 65532 (mounted Secret files are group-readable, mode 0440), a
read-only root filesystem, no capabilities, RuntimeDefault seccomp; the configuration is the
ConfigMap kueue-bridge-config, and a change to it rolls the pods (checksum annotation).
*/}}
{{- define "kueue-bridge.deployment" -}}
{{- $root := .root -}}
{{- $component := .component -}}
{{- $values := get $root.Values $component -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kueue-bridge-{{ $component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "kueue-bridge.labels" $root | nindent 4 }}
    {{- include "kueue-bridge.selectorLabels" $component | nindent 4 }}
spec:
  replicas: {{ $values.replicas }}
  {{- with .strategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "kueue-bridge.selectorLabels" $component | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "kueue-bridge.selectorLabels" $component | nindent 8 }}
        app.kubernetes.io/part-of: kueue-bridge
        app.kubernetes.io/instance: {{ $root.Release.Name }}
      annotations:
        checksum/config: {{ $root.Values.config | sha256sum }}
        {{- with $values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: kueue-bridge-{{ $component }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      terminationGracePeriodSeconds: 30
      {{- with $values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if eq $component "webhook" }}
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
        labelSelector:
          matchLabels:
            {{- include "kueue-bridge.selectorLabels" $component | nindent 12 }}
      {{- end }}
      containers:
      - name: {{ $component }}
        image: {{ include "kueue-bridge.image" $root }}
        imagePullPolicy: {{ $root.Values.image.pullPolicy }}
        args: {{ .args | toJson }}
        ports: {{ .ports | toJson }}
        {{- with $values.probes.startup }}
        startupProbe:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- with $values.probes.liveness }}
        livenessProbe:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- with $values.probes.readiness }}
        readinessProbe:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- with $values.resources }}
        resources:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- if eq $component "webhook" }}
        # keep serving until the Service's endpoints no longer name this pod (no refused admission)
        lifecycle:
          preStop:
            sleep: {seconds: {{ $values.preStopSleepSeconds | default 5 }}}
        {{- end }}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        volumeMounts:
        - {name: config, mountPath: /etc/kueue-bridge, readOnly: true}
        # the root filesystem is read-only; TLS material is staged in a private temporary directory
        - {name: tmp, mountPath: /tmp}
        {{- range .extraMounts }}
        - {{ toJson . }}
        {{- end }}
      volumes:
      - {name: config, configMap: {name: kueue-bridge-config}}
      - {name: tmp, emptyDir: {medium: Memory, sizeLimit: 16Mi}}
      {{- range .extraVolumes }}
      - {{ toJson . }}
      {{- end }}
{{- if and $values.podDisruptionBudget.enabled (gt (int $values.replicas) 1) }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: kueue-bridge-{{ $component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "kueue-bridge.labels" $root | nindent 4 }}
spec:
  minAvailable: {{ $values.podDisruptionBudget.minAvailable }}
  selector:
    matchLabels:
      {{- include "kueue-bridge.selectorLabels" $component | nindent 6 }}
{{- end }}
{{- end }}
