{{/*
Labels of every object: the ones manifests/ sets, plus Helm's own two (the only difference the
chart test ignores). Selectors and pod template labels never carry Helm's labels: a chart
version bump must not change a selector (immutable) or roll the pods.
*/}}
{{- define "redis-operator.labels" -}}
app.kubernetes.io/name: redis-operator
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/part-of: redis-operator
{{- with .version }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{- define "redis-operator.selectorLabels" -}}
app.kubernetes.io/name: redis-operator
app.kubernetes.io/component: operator
{{- end }}

{{- define "redis-operator.serviceAccountName" -}}
{{ .Values.serviceAccount.name }}
{{- end }}

{{/*
A container's extraEnv after the env the chart sets itself: a name the chart sets is refused
rather than silently overriding it (Kubernetes keeps the last of two entries of one name).
Called with (dict "extra" <list> "reserved" <list of names> "what" "hook.extraEnv").
*/}}
{{- define "redis-operator.extraEnv" -}}
{{- range .extra }}
{{- if has .name $.reserved }}
{{- fail (printf "%s: %s is set by the chart (use its value instead)" $.what .name) }}
{{- end }}
{{- end }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The image both containers, backup Jobs and restore init containers run. */}}
{{- define "redis-operator.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/*
The sidecar's timings, value name -> the env variable src/sidecar/config.ts reads. Unset (null)
values render nothing: the process's own default applies. values.schema.json holds each
variable's range as loadSidecarConfig checks it.
*/}}
{{- define "redis-operator.timingNames" -}}
{{- $names := dict
  "probeIntervalMs" "PROBE_INTERVAL_MS"
  "idleProbeIntervalMs" "IDLE_PROBE_INTERVAL_MS"
  "tickIntervalMs" "TICK_INTERVAL_MS"
  "redisConnectTimeoutMs" "REDIS_CONNECT_TIMEOUT_MS"
  "redisCommandTimeoutMs" "REDIS_COMMAND_TIMEOUT_MS"
  "kubeRequestTimeoutMs" "KUBE_REQUEST_TIMEOUT_MS"
  "secretRefreshMs" "SECRET_REFRESH_MS"
  "witnessConfirmMs" "WITNESS_CONFIRM_MS"
  "staleAfterMs" "STALE_AFTER_MS"
  "maxPartialWaitMs" "MAX_PARTIAL_WAIT_MS"
  "crashConfirmMs" "CRASH_CONFIRM_MS"
  "rolloutStallMs" "ROLLOUT_STALL_MS"
  "leaseDurationSeconds" "LEASE_DURATION_SECONDS"
  "leaseRenewDeadlineMs" "LEASE_RENEW_DEADLINE_MS"
  "leaseRetryPeriodMs" "LEASE_RETRY_PERIOD_MS"
  "leaseRequestTimeoutMs" "LEASE_REQUEST_TIMEOUT_MS"
}}
{{- toJson $names }}
{{- end }}

{{- define "redis-operator.sidecarTimingEnv" -}}
{{- $names := include "redis-operator.timingNames" . | fromJson }}
{{- range $key, $value := .Values.sidecar.timing }}
{{- if not (hasKey $names $key) }}
{{- fail (printf "sidecar.timing.%s is not a sidecar timing" $key) }}
{{- end }}
{{- if not (kindIs "invalid" $value) }}
- name: {{ get $names $key }}
  value: {{ $value | int64 | quote }}
{{- end }}
{{- end }}
{{- end }}
