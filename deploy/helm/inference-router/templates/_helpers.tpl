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

{{- define "ir.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "ir.fullname" .) .Values.serviceAccount.name }}
{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{- define "ir.authSecret" -}}
{{- if .Values.auth.existingSecret -}}{{ .Values.auth.existingSecret }}{{- else -}}{{ include "ir.fullname" . }}-auth{{- end -}}
{{- end -}}
