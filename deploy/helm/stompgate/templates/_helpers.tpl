{{/* The chart's name, at most 63 characters (a label value). */}}
{{- define "stompgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's objects' base name; the admin Service adds "-admin", so 57. */}}
{{- define "stompgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 57 | trimSuffix "-" -}}
{{- else if contains (include "stompgate.name" .) .Release.Name -}}
{{- .Release.Name | trunc 57 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "stompgate.name" .) | trunc 57 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "stompgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stompgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "stompgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "stompgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "stompgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "stompgate.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The container's memory limit in bytes, from resources.limits.memory: a
whole number with an optional Kubernetes suffix (Ki, Mi, Gi, Ti, k, M, G,
T). Anything else fails the render rather than guess.
*/}}
{{- define "stompgate.containerMemoryBytes" -}}
{{- $q := toString (required "resources.limits.memory is required: -memory-limit is rendered from it" .Values.resources.limits.memory) -}}
{{- if not (regexMatch "^[0-9]+(Ki|Mi|Gi|Ti|k|M|G|T)?$" $q) -}}
{{- fail (printf "resources.limits.memory %q: want a whole number with an optional suffix Ki, Mi, Gi, Ti, k, M, G or T" $q) -}}
{{- end -}}
{{- $n := regexReplaceAll "^([0-9]+).*$" $q "${1}" | atoi -}}
{{- $unit := regexReplaceAll "^[0-9]+" $q "" -}}
{{- $mult := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 -}}
{{- mul $n (get $mult $unit) -}}
{{- end -}}

{{/* -memory-limit in bytes: memoryLimitPercent of the container's limit. */}}
{{- define "stompgate.memoryLimitBytes" -}}
{{- $pct := int .Values.memoryLimitPercent -}}
{{- if or (lt $pct 50) (gt $pct 99) -}}
{{- fail (printf "memoryLimitPercent %d: want 50 to 99 (the Go runtime needs headroom under the container's limit)" $pct) -}}
{{- end -}}
{{- div (mul (include "stompgate.containerMemoryBytes" . | atoi) $pct) 100 -}}
{{- end -}}

{{/* The drain's whole length in seconds: preStop, grace, period, shutdown. */}}
{{- define "stompgate.drainSeconds" -}}
{{- $d := .Values.drain -}}
{{- add (int $d.preStopSleepSeconds) (int $d.graceSeconds) (int $d.periodSeconds) (int $d.shutdownTimeoutSeconds) -}}
{{- end -}}

{{/* terminationGracePeriodSeconds: given, or the drain plus 10 s. */}}
{{- define "stompgate.terminationGrace" -}}
{{- $drain := include "stompgate.drainSeconds" . | atoi -}}
{{- if eq (toString .Values.terminationGracePeriodSeconds) "" -}}
{{- add $drain 10 -}}
{{- else if le (int .Values.terminationGracePeriodSeconds) $drain -}}
{{- fail (printf "terminationGracePeriodSeconds %v must exceed the drain (preStop + grace + period + shutdown timeout = %d s): the kubelet would kill the pod mid-drain" .Values.terminationGracePeriodSeconds $drain) -}}
{{- else -}}
{{- int .Values.terminationGracePeriodSeconds -}}
{{- end -}}
{{- end -}}

{{/* The policy in force, as YAML text. */}}
{{- define "stompgate.policyText" -}}
{{- if .Values.policy -}}
{{- .Values.policy -}}
{{- else -}}
{{- .Files.Get "files/policy-default.yaml" -}}
{{- end -}}
{{- end -}}

{{/* The policy's WebSocket handshake zone (the one routing to upstream ws), as JSON; {} if none. */}}
{{- define "stompgate.wsZone" -}}
{{- $policy := include "stompgate.policyText" . | fromYaml -}}
{{- $found := dict -}}
{{- range $z := $policy.zones -}}
{{- range $r := $z.routes -}}
{{- if and (eq (toString $r.upstream) "ws") (not $found.name) -}}
{{- $_ := set $found "name" $z.name -}}
{{- $_ := set $found "rate" (toString $z.rate) -}}
{{- $_ := set $found "burst" (int (default 0 $z.burst)) -}}
{{- $_ := set $found "max_connections" (int (default 0 $z.max_connections)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $found -}}
{{- end -}}

{{/* The ingress-nginx annotations mirroring the handshake zone. */}}
{{- define "stompgate.ingressLimits" -}}
{{- $z := include "stompgate.wsZone" . | fromJson -}}
{{- if $z.rate -}}
{{- if not (regexMatch "^[0-9]+r/[sm]$" $z.rate) -}}
{{- fail (printf "policy zone %s: rate %q is not <n>r/s or <n>r/m" $z.name $z.rate) -}}
{{- end -}}
{{- $n := regexReplaceAll "^([0-9]+)r/[sm]$" $z.rate "${1}" | atoi -}}
{{- $per := regexReplaceAll "^[0-9]+r/([sm])$" $z.rate "${1}" -}}
{{- $burst := int $z.burst -}}
{{- $mult := max 1 (div (add $burst $n -1) $n) }}
nginx.ingress.kubernetes.io/limit-{{ if eq $per "s" }}rps{{ else }}rpm{{ end }}: {{ $n | quote }}
nginx.ingress.kubernetes.io/limit-burst-multiplier: {{ $mult | quote }}
{{- if gt (int $z.max_connections) 0 }}
nginx.ingress.kubernetes.io/limit-connections: {{ int $z.max_connections | quote }}
{{- end }}
{{- end -}}
{{- end -}}
