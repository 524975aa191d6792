{{/* The chart's name (app.kubernetes.io/name, the selectors). */}}
{{- define "scale-units.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' base name: the release name when it contains the chart's name. */}}
{{- define "scale-units.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object's metadata. */}}
{{- define "scale-units.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "scale-units.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The pods' selector. One release per namespace: the selector is the chart's name. */}}
{{- define "scale-units.selectorLabels" -}}
app.kubernetes.io/name: {{ include "scale-units.name" . }}
{{- end }}

{{/* The service's DNS names (the serving certificates'). */}}
{{- define "scale-units.dnsNames" -}}
- {{ include "scale-units.fullname" . }}.{{ .Release.Namespace }}.svc
- {{ include "scale-units.fullname" . }}.{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}
{{- end }}

{{/* The Secret of the tokens. */}}
{{- define "scale-units.tokenSecret" -}}
{{- default (printf "%s-token" (include "scale-units.fullname" .)) .Values.tokenSecret }}
{{- end }}

{{/* serve.yaml: every option of `scale-units serve` the chart sets, then .Values.config over it. */}}
{{- define "scale-units.serveConfig" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not (or .Values.redis.url .Values.redis.existingSecret)) }}
{{- fail "replicaCount > 1 needs redis.url or redis.existingSecret: each replica keeps observations in memory otherwise" }}
{{- end }}
{{- $c := dict "listen" (printf "0.0.0.0:%d" (int .Values.webhook.port)) }}
{{- $_ := set $c "policy" "/opt/scale-units/scale_units_evaluator.wasm" }}
{{- $_ := set $c "token_file" "/etc/scale-units/token/admin" }}
{{- $_ := set $c "push_token_file" "/etc/scale-units/token/push" }}
{{- $_ := set $c "read_token_file" "/etc/scale-units/token/read" }}
{{- $_ := set $c "kubernetes" true }}
{{- $_ := set $c "units" "/etc/scale-units/units" }}
{{- if .Values.redis.url }}
{{- $_ := set $c "redis" .Values.redis.url }}
{{- else if .Values.redis.existingSecret }}
{{- $_ := set $c "redis_url_file" "/etc/scale-units/redis/url" }}
{{- end }}
{{- $_ := set $c "webhook" true }}
{{- $_ := set $c "tls_cert" "/etc/scale-units/tls/tls.crt" }}
{{- $_ := set $c "tls_key" "/etc/scale-units/tls/tls.key" }}
{{- if .Values.keda.enabled }}
{{- $_ := set $c "keda_listen" (printf "0.0.0.0:%d" (int .Values.keda.port)) }}
{{- $_ := set $c "keda_tls_cert" "/etc/scale-units/grpc-tls/tls.crt" }}
{{- $_ := set $c "keda_tls_key" "/etc/scale-units/grpc-tls/tls.key" }}
{{- $_ := set $c "keda_client_ca" "/etc/scale-units/grpc-tls/ca.crt" }}
{{- end }}
{{- $_ := set $c "override_groups" .Values.overrideGroups }}
{{- $_ := set $c "handshake_timeout_ms" 3000 }}
{{- $_ := set $c "max_connections_per_peer" 64 }}
{{- $_ := set $c "reserved_connections" 64 }}
{{- $_ := set $c "header_timeout_ms" 10000 }}
{{- $_ := set $c "request_timeout_ms" 30000 }}
{{- $_ := set $c "max_connections" 1024 }}
{{- $_ := set $c "shutdown_delay_ms" 5000 }}
{{- $_ := set $c "drain_timeout_ms" 20000 }}
{{- toYaml (mergeOverwrite $c .Values.config) }}
{{- end }}
