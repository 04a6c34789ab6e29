{{/* Names: <release>-facecompute-<component>, or <release>-<component> when the release is already named facecompute. */}}
{{- define "facecompute.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "facecompute.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "facecompute.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "facecompute.labels" -}}
helm.sh/chart: {{ include "facecompute.chart" . }}
app.kubernetes.io/name: {{ include "facecompute.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: facecompute
{{- end }}

{{/* Selector labels of one component: (dict "root" $ "component" "gateway"). */}}
{{- define "facecompute.selectorLabels" -}}
app.kubernetes.io/name: {{ include "facecompute.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "facecompute.componentLabels" -}}
{{ include "facecompute.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The image of a component; GPU model servers take the CUDA target's tag. */}}
{{- define "facecompute.image" -}}
{{- $tag := default .root.Chart.AppVersion .root.Values.image.tag }}
{{- if and (eq .component "model-server") .root.Values.modelServer.gpu.enabled }}
{{- $tag = printf "%s%s" $tag .root.Values.modelServer.gpu.tagSuffix }}
{{- end }}
{{- printf "%s:%s" .root.Values.image.repository $tag }}
{{- end }}

{{- define "facecompute.secretName" -}}
{{- default (printf "%s-secrets" (include "facecompute.fullname" .)) .Values.secrets.existingSecret }}
{{- end }}

{{- define "facecompute.modelServerHeadless" -}}
{{- printf "%s-model-server-headless" (include "facecompute.fullname" .) }}
{{- end }}

{{- define "facecompute.gatewayService" -}}
{{- printf "%s-gateway" (include "facecompute.fullname" .) }}
{{- end }}

{{/* A subchart's full name as its own helpers compute it (an alias is the subchart's .Chart.Name). */}}
{{- define "facecompute.subchartFullname" -}}
{{- $v := .values }}
{{- if $v.fullnameOverride }}
{{- $v.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .name $v.nameOverride }}
{{- if contains $name .root.Release.Name }}
{{- .root.Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .root.Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* terminationGracePeriodSeconds: the preStop pause, the drain, and the margin; one formula for every pod. */}}
{{- define "facecompute.gracePeriod" -}}
{{- add .Values.drain.preStopSeconds .Values.drain.timeoutSeconds .Values.drain.marginSeconds }}
{{- end }}

{{/*
Where the database URL comes from: a Secret you manage, the chart's Secret, or the CloudNativePG
cluster's application Secret (written by its operator).
*/}}
{{- define "facecompute.databaseUrlRef" -}}
{{- if .Values.secrets.existingSecret -}}
secretKeyRef: {name: {{ .Values.secrets.existingSecret | quote }}, key: database-url}
{{- else if .Values.secrets.databaseUrl -}}
secretKeyRef: {name: {{ include "facecompute.secretName" . | quote }}, key: database-url}
{{- else -}}
secretKeyRef: {name: {{ printf "%s-app" (include "facecompute.subchartFullname" (dict "root" . "name" "postgresql" "values" .Values.postgresql)) | quote }}, key: uri}
{{- end }}
{{- end }}

{{- define "facecompute.hasRedis" -}}
{{- if or .Values.secrets.existingSecret .Values.secrets.redisUrl .Values.valkey.enabled }}true{{ end }}
{{- end }}

{{/* The Redis URL the chart writes into its Secret: given, or the Valkey subchart's Service. */}}
{{- define "facecompute.redisUrl" -}}
{{- if .Values.secrets.redisUrl }}
{{- .Values.secrets.redisUrl }}
{{- else if .Values.valkey.enabled }}
{{- printf "redis://%s.%s.svc.%s:6379" (include "facecompute.subchartFullname" (dict "root" . "name" "valkey" "values" .Values.valkey)) .Release.Namespace .Values.clusterDomain }}
{{- end }}
{{- end }}

{{/*
The secret variables of a component, each only where it is used:
  gateway, MCP   database, Redis, internal token
  console        database, Stripe key and webhook secret, SMTP URL
  model server   internal token (it holds no accounts)
Keys of an existingSecret other than database-url and internal-token are optional.
*/}}
{{- define "facecompute.secretKeyEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef: {name: {{ .secret | quote }}, key: {{ .key }}, optional: {{ .optional }}}
{{- end }}

{{- define "facecompute.secretEnv" -}}
{{- $root := .root }}
{{- $s := $root.Values.secrets }}
{{- $secret := include "facecompute.secretName" $root }}
{{- $optional := not (empty $s.existingSecret) }}
{{- $c := .component }}
{{- if ne $c "model-server" }}
- name: FACECOMPUTE_DATABASE_URL
  valueFrom:
    {{- include "facecompute.databaseUrlRef" $root | nindent 4 }}
{{- end }}
{{- if and (or (eq $c "gateway") (eq $c "mcp")) (include "facecompute.hasRedis" $root) }}
{{ include "facecompute.secretKeyEnv" (dict "name" "FACECOMPUTE_REDIS_URL" "secret" $secret "key" "redis-url" "optional" $optional) }}
{{- end }}
{{- if eq $c "console" }}
{{- if or $s.existingSecret $s.stripeSecretKey }}
{{ include "facecompute.secretKeyEnv" (dict "name" "FACECOMPUTE_STRIPE_SECRET_KEY" "secret" $secret "key" "stripe-secret-key" "optional" $optional) }}
{{- end }}
{{- if or $s.existingSecret $s.stripeWebhookSecret }}
{{ include "facecompute.secretKeyEnv" (dict "name" "FACECOMPUTE_STRIPE_WEBHOOK_SECRET" "secret" $secret "key" "stripe-webhook-secret" "optional" $optional) }}
{{- end }}
{{- if or $s.existingSecret $s.smtpUrl }}
{{ include "facecompute.secretKeyEnv" (dict "name" "FACECOMPUTE_SMTP_URL" "secret" $secret "key" "smtp-url" "optional" $optional) }}
{{- end }}
{{- end }}
{{- if ne $c "console" }}
- name: FACECOMPUTE_INTERNAL_TOKEN
  valueFrom:
    secretKeyRef: {name: {{ $secret | quote }}, key: internal-token}
{{- end }}
{{- end }}

{{/* The model servers' headless Service, as the gateway and the MCP endpoint find the replicas. */}}
{{- define "facecompute.modelServerDns" -}}
{{- printf "http://%s.%s.svc.%s:%d" (include "facecompute.modelServerHeadless" .) .Release.Namespace .Values.clusterDomain (int .Values.modelServer.port) }}
{{- end }}

{{/*
A FACECOMPUTE_* value as the environment carries it. Values files give YAML numbers as float64, which
toString would print as 2.62144e+07, a value the service refuses for an integer variable.
*/}}
{{- define "facecompute.envValue" -}}
{{- if and (kindIs "float64" .) (eq (floor .) .) }}
{{- printf "%d" (int64 .) }}
{{- else }}
{{- toString . }}
{{- end }}
{{- end }}
