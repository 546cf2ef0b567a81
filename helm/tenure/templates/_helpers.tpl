{{/*
The chart name, overridable with nameOverride.
*/}}
{{- define "tenure.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's resources: "<release>-<chart>", or the release name alone when it
already contains the chart name. Kubernetes names are limited to 63 characters.
*/}}
{{- define "tenure.fullname" -}}
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

{{/*
"<chart>-<version>" for the helm.sh/chart label.
*/}}
{{- define "tenure.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels every resource carries.
*/}}
{{- define "tenure.labels" -}}
helm.sh/chart: {{ include "tenure.chart" . }}
{{ include "tenure.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tenure
{{- end }}

{{/*
Labels that identify the release's pods (service and migration alike).
*/}}
{{- define "tenure.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tenure.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels that identify the service pods only: Service, PodDisruptionBudget and topology spread
select by these, so a running migration pod is never an endpoint.
*/}}
{{- define "tenure.serverSelectorLabels" -}}
{{ include "tenure.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{/*
The ServiceAccount of the service pods.
*/}}
{{- define "tenure.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tenure.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference: a digest wins over a tag; the tag defaults to the chart's appVersion.
*/}}
{{- define "tenure.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
The database Secret's name, required. Checked here rather than by the schema (which checks only
its form): a schema error reads "at '/database/existingSecret': minLength: got 0, want 1", this
one says what to set.
*/}}
{{- define "tenure.databaseSecret" -}}
{{- required "database.existingSecret is required: the name of an existing Secret in the release namespace whose key database.existingSecretKey (default \"url\") holds the PostgreSQL URL, e.g. --set database.existingSecret=tenure-db" .Values.database.existingSecret }}
{{- end }}

{{/*
The non-secret TENURE_* settings as a flat YAML map. The ConfigMap carries them for the service
pods; the migration Job, which runs before the ConfigMap exists, renders the same map inline.
Integers go through int64: Helm reads numbers as floats, which print 1000000 as 1e+06.
*/}}
{{- define "tenure.settings" -}}
TENURE_HOST: "0.0.0.0"
TENURE_PORT: {{ .Values.containerPort | int64 | quote }}
TENURE_WORKERS: "1"
TENURE_LOG_LEVEL: {{ .Values.config.logLevel | quote }}
TENURE_POOL_MIN_SIZE: {{ .Values.config.poolMinSize | int64 | quote }}
TENURE_POOL_MAX_SIZE: {{ .Values.config.poolMaxSize | int64 | quote }}
TENURE_POOL_ACQUIRE_TIMEOUT_SECONDS: {{ .Values.config.poolAcquireTimeoutSeconds | quote }}
TENURE_STATEMENT_TIMEOUT_MS: {{ .Values.config.statementTimeoutMs | int64 | quote }}
TENURE_LOCK_TIMEOUT_MS: {{ .Values.config.lockTimeoutMs | int64 | quote }}
TENURE_MIN_TTL_SECONDS: {{ .Values.config.minTtlSeconds | quote }}
TENURE_MAX_TTL_SECONDS: {{ .Values.config.maxTtlSeconds | quote }}
TENURE_MAX_WAIT_SECONDS: {{ .Values.config.maxWaitSeconds | quote }}
TENURE_MAX_PAGE_SIZE: {{ .Values.config.maxPageSize | int64 | quote }}
TENURE_DEFAULT_PAGE_SIZE: {{ .Values.config.defaultPageSize | int64 | quote }}
TENURE_ALLOW_ASYNC_COMMIT: {{ .Values.config.allowAsyncCommit | quote }}
{{- end }}

{{/*
The writable /tmp (the root filesystem is read-only), shared by service and migration pods.
*/}}
{{- define "tenure.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}

{{- define "tenure.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end }}

{{/*
The path of the mounted tokens file (auth.tokens).
*/}}
{{- define "tenure.tokensFile" -}}
{{- printf "%s/%s" (.Values.auth.tokens.mountPath | trimSuffix "/") .Values.auth.tokens.existingSecretKey }}
{{- end }}

{{/*
Rules between values that a JSON schema cannot state; the service would refuse the first three,
and a release without authentication, at start, so the release fails here instead of in a crash
loop.
*/}}
{{- define "tenure.validateValues" -}}
{{- $c := .Values.config }}
{{- if gt (float64 $c.poolMinSize) (float64 $c.poolMaxSize) }}
{{- fail "config.poolMinSize must not exceed config.poolMaxSize" }}
{{- end }}
{{- if gt (float64 $c.minTtlSeconds) (float64 $c.maxTtlSeconds) }}
{{- fail "config.minTtlSeconds must not exceed config.maxTtlSeconds" }}
{{- end }}
{{- if gt (float64 $c.defaultPageSize) (float64 $c.maxPageSize) }}
{{- fail "config.defaultPageSize must not exceed config.maxPageSize" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (float64 .Values.autoscaling.minReplicas) (float64 .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- if not (or .Values.auth.tokens.enabled .Values.auth.allowUnauthenticated) }}
{{- fail "authentication is not configured: set auth.tokens.enabled=true and auth.tokens.existingSecret (a Secret holding the tokens file made with `tenure token new`), or auth.allowUnauthenticated=true to let anyone who reaches the service use it" }}
{{- end }}
{{- if and .Values.auth.tokens.enabled .Values.serviceMonitor.enabled (not (.Values.serviceMonitor.bearerTokenSecret | default dict).name) }}
{{- fail "serviceMonitor.bearerTokenSecret.name is required with auth.tokens.enabled: /metrics answers 401 without a reader token" }}
{{- end }}
{{- if ge (float64 .Values.preStopSleepSeconds) (float64 .Values.terminationGracePeriodSeconds) }}
{{- if gt (float64 .Values.preStopSleepSeconds) 0.0 }}
{{- fail "preStopSleepSeconds must be shorter than terminationGracePeriodSeconds" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The migration Job's name; Job names become a label value, so they too stay within 63 characters.
*/}}
{{- define "tenure.migrationJobName" -}}
{{- printf "%s-migrate" (include "tenure.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{/*
The Grafana dashboard ConfigMap's name, within 63 characters.
*/}}
{{- define "tenure.dashboardName" -}}
{{- printf "%s-dashboard" (include "tenure.fullname" . | trunc 53 | trimSuffix "-") }}
{{- end }}
