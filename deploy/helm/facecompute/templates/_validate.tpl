{{/*
What the chart refuses at `helm template`/`helm install`, each with what to set instead, so that a
misconfiguration never becomes a pod that starts and crash-loops (or, worse, runs wrongly). Types,
ranges and unknown keys are values.schema.json's; these are the rules across values. Included once,
by configmap.yaml, which every release renders.
*/}}
{{- define "facecompute.validate" -}}
{{- $v := .Values }}
{{- $s := $v.secrets }}
{{- $c := $v.config }}
{{- if not (or $s.existingSecret $s.databaseUrl $v.postgresql.enabled) }}
{{- fail "facecompute: no database. Set secrets.databaseUrl (postgres://user:password@host:5432/db), secrets.existingSecret (a Secret with the key database-url) or postgresql.enabled=true: the gateway, MCP and console pods share one accounts store, which SQLite cannot be across pods." }}
{{- end }}
{{- if and $v.valkey.enabled (not $s.redisUrl) (not $s.existingSecret) $v.valkey.auth $v.valkey.auth.enabled }}
{{- fail "facecompute: valkey.auth.enabled needs secrets.redisUrl (redis://:password@host:6379) or secrets.existingSecret with the key redis-url: the chart cannot read Valkey's ACL passwords." }}
{{- end }}
{{- if and (eq (toString (get $c "FACECOMPUTE_REMOTE_IMAGES")) "allowlist") (not (get $c "FACECOMPUTE_REMOTE_ORIGINS")) }}
{{- fail "facecompute: config.FACECOMPUTE_REMOTE_IMAGES=allowlist needs config.FACECOMPUTE_REMOTE_ORIGINS (the exact https:// origins allowed)." }}
{{- end }}
{{- if and (eq $v.modelServer.autoscaling.metric "queueWait") (not $v.metrics.enabled) }}
{{- fail "facecompute: modelServer.autoscaling.metric=queueWait needs metrics.enabled=true: the queue wait is the gateways' facecompute_gateway_queue_wait_seconds, scraped from their metrics port." }}
{{- end }}
{{- if and $v.ingress.enabled (not $v.ingress.host) }}
{{- fail "facecompute: ingress.enabled needs ingress.host (the gateway's and MCP endpoint's host name)." }}
{{- end }}
{{- if $v.production }}
{{- if not (or $s.existingSecret $s.redisUrl $v.valkey.enabled) }}
{{- fail "facecompute: production needs Redis. Set secrets.redisUrl (redis://host:6379), secrets.existingSecret (a Secret with the key redis-url) or valkey.enabled=true: without it each gateway keeps its own rate limits, multiplied by the replica count." }}
{{- end }}
{{- if not (or $s.existingSecret $s.internalToken) }}
{{- fail "facecompute: production needs the model servers' internal token from you. Set secrets.existingSecret (a Secret with the key internal-token, e.g. `openssl rand -hex 32`) or secrets.internalToken: a generated one changes with every `helm template`." }}
{{- end }}
{{- $gw := ternary $v.gateway.autoscaling.minReplicas $v.gateway.replicaCount $v.gateway.autoscaling.enabled }}
{{- if lt (int $gw) 2 }}
{{- fail (printf "facecompute: production needs at least 2 gateways (gateway.replicaCount, or gateway.autoscaling.minReplicas with autoscaling), got %d: one gateway is a single point of failure and cannot be rolled without downtime." (int $gw)) }}
{{- end }}
{{- $ms := ternary $v.modelServer.autoscaling.minReplicas $v.modelServer.replicaCount $v.modelServer.autoscaling.enabled }}
{{- if lt (int $ms) 2 }}
{{- fail (printf "facecompute: production needs at least 2 model servers (modelServer.replicaCount, or modelServer.autoscaling.minReplicas with autoscaling), got %d." (int $ms)) }}
{{- end }}
{{- if ne (toString (get $c "FACECOMPUTE_BILLING_PROVIDER")) "stripe" }}
{{- fail "facecompute: production needs config.FACECOMPUTE_BILLING_PROVIDER=stripe (and the Stripe key in secrets): the test provider accepts Stripe's published test card ids, so anyone would get the card allowance." }}
{{- end }}
{{- if eq (toString (get $c "FACECOMPUTE_TEST_WEIGHTS")) "true" }}
{{- fail "facecompute: config.FACECOMPUTE_TEST_WEIGHTS=true serves models built from random weights; never in production." }}
{{- end }}
{{- if and $v.ingress.enabled (empty $v.ingress.trustedProxies) }}
{{- fail "facecompute: production with the Ingress needs ingress.trustedProxies (FACECOMPUTE_TRUSTED_PROXIES: the Ingress controller's pod addresses, e.g. [10.0.0.0/8]): without it every client has the controller's address, so one client's failed sign-ins (100 an hour) block all sign-ins and 5 anonymous signups an hour block everyone else's." }}
{{- end }}
{{- if and $v.networkPolicy.enabled (empty $v.networkPolicy.egress.database.to) }}
{{- fail "facecompute: production needs networkPolicy.egress.database.to (NetworkPolicy peers: your PostgreSQL's addresses, e.g. [{ipBlock: {cidr: 10.20.0.5/32}}], or its pods' selectors): without it the gateway, MCP and console pods may open the database port on any address." }}
{{- end }}
{{- if and $v.networkPolicy.enabled (empty $v.networkPolicy.egress.redis.to) }}
{{- fail "facecompute: production needs networkPolicy.egress.redis.to (NetworkPolicy peers: your Redis's addresses or its pods' selectors): without it the gateway and MCP pods may open the Redis port on any address." }}
{{- end }}
{{- if $v.ingress.enabled }}
{{- if empty $v.ingress.tls }}
{{- fail "facecompute: production needs ingress.tls: keys, session tokens and images must not cross the internet in clear (the pods refuse http public URLs with FACECOMPUTE_PRODUCTION)." }}
{{- end }}
{{- if and $v.console.enabled (not $v.ingress.consoleHost) (not (get $c "FACECOMPUTE_PUBLIC_CONSOLE_URL")) }}
{{- fail "facecompute: production needs ingress.consoleHost (or config.FACECOMPUTE_PUBLIC_CONSOLE_URL): the console's https address, for its Secure cookies and the links of verification mails." }}
{{- end }}
{{- else if not (and (hasPrefix "https://" (toString (get $c "FACECOMPUTE_PUBLIC_BASE_URL"))) (hasPrefix "https://" (toString (get $c "FACECOMPUTE_PUBLIC_MCP_URL"))) (hasPrefix "https://" (toString (get $c "FACECOMPUTE_PUBLIC_CONSOLE_URL")))) }}
{{- fail "facecompute: production without the chart's Ingress needs config.FACECOMPUTE_PUBLIC_BASE_URL, FACECOMPUTE_PUBLIC_MCP_URL and FACECOMPUTE_PUBLIC_CONSOLE_URL as https URLs (and config.FACECOMPUTE_TRUSTED_PROXIES for the proxy that terminates TLS)." }}
{{- end }}
{{- if ne (toString (get $c "FACECOMPUTE_MAILER")) "smtp" }}
{{- fail "facecompute: production needs config.FACECOMPUTE_MAILER=smtp (and the SMTP URL in secrets): the file mailer keeps verification mails inside the pod, so nobody could verify an email." }}
{{- end }}
{{- end }}
{{- if and (eq (toString (get $c "FACECOMPUTE_MAILER")) "smtp") (not (or $s.smtpUrl $s.existingSecret)) }}
{{- fail "facecompute: config.FACECOMPUTE_MAILER=smtp needs secrets.smtpUrl or secrets.existingSecret with the key smtp-url." }}
{{- end }}
{{- if and (eq (toString (get $c "FACECOMPUTE_BILLING_PROVIDER")) "stripe") (not (or $s.stripeSecretKey $s.existingSecret)) }}
{{- fail "facecompute: config.FACECOMPUTE_BILLING_PROVIDER=stripe needs secrets.stripeSecretKey or secrets.existingSecret with the key stripe-secret-key." }}
{{- end }}
{{- if and (eq (toString (get $c "FACECOMPUTE_BILLING_PROVIDER")) "stripe") (not (or $s.stripeWebhookSecret $s.existingSecret)) }}
{{- fail "facecompute: config.FACECOMPUTE_BILLING_PROVIDER=stripe needs secrets.stripeWebhookSecret (whsec_…) or secrets.existingSecret with the key stripe-webhook-secret: the card allowance depends on the card staying attached, which only Stripe's signed webhook events report." }}
{{- end }}
{{- /* At install time (not `helm template`), a Secret you manage must hold what the pods cannot start without. */}}
{{- if $s.existingSecret }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $s.existingSecret }}
{{- if $existing }}
{{- $keys := list "database-url" "internal-token" }}
{{- if $v.production }}{{- $keys = append $keys "redis-url" }}{{- end }}
{{- if eq (toString (get $c "FACECOMPUTE_BILLING_PROVIDER")) "stripe" }}{{- $keys = concat $keys (list "stripe-secret-key" "stripe-webhook-secret") }}{{- end }}
{{- if eq (toString (get $c "FACECOMPUTE_MAILER")) "smtp" }}{{- $keys = append $keys "smtp-url" }}{{- end }}
{{- range $keys }}
{{- if not (hasKey ($existing.data | default dict) .) }}
{{- fail (printf "facecompute: Secret %s has no key %s (secrets.existingSecret)." $s.existingSecret .) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
