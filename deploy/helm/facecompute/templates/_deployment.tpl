{{/*
One Deployment per component, all from this one definition so that probes, shutdown and security
cannot drift between them: (dict "root" $ "component" "gateway" "values" .Values.gateway "command" "gateway").
*/}}
{{- define "facecompute.deployment" -}}
{{- $root := .root }}
{{- $v := .values }}
{{- $component := .component }}
{{- $ctx := dict "root" $root "component" $component }}
{{- $isModelServer := eq $component "model-server" }}
{{- $gpu := and $isModelServer $root.Values.modelServer.gpu.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "facecompute.fullname" $root }}-{{ $component }}
  labels:
    {{- include "facecompute.componentLabels" $ctx | nindent 4 }}
spec:
  {{- if not $v.autoscaling.enabled }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate:
      # A new pod is ready before an old one leaves (the old one then drains).
      maxSurge: 1
      maxUnavailable: 0
  selector:
    matchLabels:
      {{- include "facecompute.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "facecompute.componentLabels" $ctx | nindent 8 }}
      annotations:
        # A new configuration rolls the pods. Secrets are not hashed here: a hash of a database URL
        # in a pod annotation would let anyone who can read pods test password guesses offline. After
        # changing a Secret: kubectl rollout restart deploy -l app.kubernetes.io/instance=<release>.
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      # No pod here talks to the Kubernetes API.
      automountServiceAccountToken: false
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ include "facecompute.gracePeriod" $root }}
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "facecompute.selectorLabels" $ctx | nindent 14 }}
      containers:
        - name: {{ $component }}
          image: {{ include "facecompute.image" $ctx | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: [{{ .command | quote }}]
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          ports:
            - name: http
              containerPort: {{ $v.port }}
              protocol: TCP
            {{- if and (eq $component "gateway") $root.Values.metrics.enabled }}
            - name: metrics
              containerPort: {{ $root.Values.metrics.port }}
              protocol: TCP
            {{- end }}
          envFrom:
            - configMapRef:
                name: {{ include "facecompute.fullname" $root }}-config
          env:
            {{- include "facecompute.secretEnv" $ctx | trim | nindent 12 }}
            {{- if or (eq $component "gateway") (eq $component "mcp") }}
            - name: FACECOMPUTE_MODEL_SERVER_DNS
              value: {{ include "facecompute.modelServerDns" $root | quote }}
            {{- end }}
            {{- if and (eq $component "gateway") $root.Values.metrics.enabled }}
            - name: FACECOMPUTE_METRICS_PORT
              value: {{ $root.Values.metrics.port | quote }}
            - name: FACECOMPUTE_METRICS_HOST
              value: "0.0.0.0"
            {{- end }}
            {{- if $isModelServer }}
            # Reached by the gateways and MCP endpoints through the headless Service; the internal
            # token above is what allows a non-loopback bind.
            - name: FACECOMPUTE_MODEL_SERVER_HOST
              value: "0.0.0.0"
            - name: FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES
              value: {{ mul (int $root.Values.modelServer.memoryBudgetMiB) 1048576 | quote }}
            {{- end }}
            {{- if $gpu }}
            - name: FACECOMPUTE_ORT_PROVIDER
              value: "cuda"
            {{- end }}
            {{- range $k, $val := $v.env }}
            - name: {{ $k }}
              value: {{ include "facecompute.envValue" $val | quote }}
            {{- end }}
          # Liveness asks only whether the process answers; readiness whether it can serve now (model
          # warm, dependencies reachable). The startup probe holds both off until the listener is up.
          startupProbe:
            httpGet: {path: /health, port: http}
            periodSeconds: {{ $v.startupProbe.periodSeconds }}
            failureThreshold: {{ $v.startupProbe.failureThreshold }}
            timeoutSeconds: 2
          livenessProbe:
            httpGet: {path: /health, port: http}
            periodSeconds: 10
            timeoutSeconds: {{ ternary 5 3 $isModelServer }}
            failureThreshold: 3
          readinessProbe:
            httpGet: {path: /readiness, port: http}
            periodSeconds: 5
            # /readiness answers within FACECOMPUTE_READINESS_TIMEOUT_MS (800 ms by default).
            timeoutSeconds: 2
            failureThreshold: 2
          lifecycle:
            preStop:
              sleep:
                seconds: {{ $root.Values.drain.preStopSeconds }}
          {{- $resources := deepCopy $v.resources }}
          {{- if $isModelServer }}
          {{- /* The memory budget the model server admits work by sets its memory; 5/4 of it is the limit. */}}
          {{- $budget := int $root.Values.modelServer.memoryBudgetMiB }}
          {{- $_ := set $resources "requests" (merge (dict "memory" (printf "%dMi" $budget)) (omit ($resources.requests | default dict) "memory")) }}
          {{- $_ := set $resources "limits" (merge (dict "memory" (printf "%dMi" (div (mul $budget 5) 4))) (omit ($resources.limits | default dict) "memory")) }}
          {{- end }}
          {{- if $gpu }}
          {{- $limits := merge (dict "nvidia.com/gpu" $root.Values.modelServer.gpu.count) ($resources.limits | default dict) }}
          {{- $_ := set $resources "limits" $limits }}
          {{- end }}
          resources:
            {{- toYaml $resources | nindent 12 }}
          volumeMounts:
            - {name: tmp, mountPath: /tmp}
            - {name: data, mountPath: /var/lib/facecompute}
      volumes:
        # The image's root filesystem is read-only; these are its only writable paths.
        - name: tmp
          emptyDir: {sizeLimit: {{ $root.Values.tmpSizeLimit }}}
        - name: data
          emptyDir: {sizeLimit: {{ $root.Values.tmpSizeLimit }}}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
