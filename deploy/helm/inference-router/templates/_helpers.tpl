{{- define "ir.name" -}}inference-router{{- end -}}

{{- define "ir.fullname" -}}
{{- if contains "inference-router" .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else -}}{{ printf "%s-inference-router" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "ir.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ir.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ir.labels" -}}
{{ include "ir.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- /* With source=kubernetes the account is bound to the read-only (Cluster)Role: never fall back
to the namespace's "default" account, which every other pod there may run as. With source=file
there is no binding and no token mounted, so "default" is harmless. */ -}}
{{- define "ir.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "ir.fullname" .) .Values.serviceAccount.name }}
{{- else if .Values.serviceAccount.name -}}{{ .Values.serviceAccount.name }}
{{- else if eq .Values.source "kubernetes" -}}
{{- fail `serviceAccount.name: with serviceAccount.create=false, name the ServiceAccount the router runs as; without one the chart would bind its role (which reads every Pod it watches) to the namespace's "default" ServiceAccount, and so to every pod that runs as it` -}}
{{- else -}}default{{- end -}}
{{- end -}}

{{- define "ir.authSecret" -}}
{{- if .Values.auth.existingSecret -}}{{ .Values.auth.existingSecret }}{{- else -}}{{ include "ir.fullname" . }}-auth{{- end -}}
{{- end -}}

{{- /* The port of tracing.endpoint (its own, else 80 or 443 by scheme), for the NetworkPolicy's
egress; "" when tracing is off or goes to the default http://localhost:4318 (in the pod). */ -}}
{{- define "ir.tracingPort" -}}
{{- if and .Values.tracing.enabled .Values.tracing.endpoint -}}
{{- $u := urlParse .Values.tracing.endpoint -}}
{{- $port := regexFind "[0-9]+$" (regexFind ":[0-9]+$" $u.host) -}}
{{- $port | default (eq $u.scheme "https" | ternary "443" "80") -}}
{{- end -}}
{{- end -}}

{{- /* (list NAME VALUE MIN MAX ENV): VALUE as a whole number from MIN to MAX (MAX -1: no upper
bound), else fail naming it. values.schema.json refuses the same; this holds where the schema
is skipped (helm --skip-schema-validation), so that "16Mi" never renders as 0. */ -}}
{{- define "ir.intIn" -}}
{{- $name := index . 0 -}}{{- $v := index . 1 -}}{{- $min := index . 2 -}}{{- $max := index . 3 -}}
{{- $range := ternary (printf "from %d to %d" $min $max) (printf "of at least %d" $min) (ge $max 0) -}}
{{- $msg := printf "%s: expected a whole number %s (%s), got %q" $name $range (index . 4) (toString $v) -}}
{{- if not (or (kindIs "int" $v) (kindIs "int64" $v) (kindIs "float64" $v)) -}}{{- fail $msg -}}{{- end -}}
{{- if or (ne (float64 (int64 $v)) (float64 $v)) (lt (int64 $v) (int64 $min)) (and (ge $max 0) (gt (int64 $v) (int64 $max))) -}}{{- fail $msg -}}{{- end -}}
{{- int64 $v -}}
{{- end -}}
