/**
 * The Helm chart (deploy/helm/facecompute), offline: `helm lint` with each values file, `helm template`
 * with the default, production and GPU values, every rendered document decoded strictly into the
 * Kubernetes API types with cross-object checks (deploy/helm/validate, Go, k8s.io/api), and the
 * structure issue 16 asks of it: separate Deployments, probes, shutdown consistent with the drain
 * timeout, the NetworkPolicy, the Secrets, GPU values, the ServiceMonitor, and a configuration that
 * the service itself accepts (src/config's loadConfig on each pod's environment). Misconfigurations
 * must fail at render time with their message.
 *
 * Needs helm v3.22.0 (scripts/bootstrap.sh: go install helm.sh/helm/v3/cmd/helm@v3.22.0) and Go.
 * Without them it fails, naming what is missing: it never skips.
 */
import t from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { VARS } from '../src/config/spec.js';
import { loadConfig, startupProblems } from '../src/config/index.js';
import { assertSafeBind } from '../src/model-server/internal-auth.js';

const CHART = join(REPO_ROOT, 'deploy', 'helm', 'facecompute');
const VALIDATOR_SRC = join(REPO_ROOT, 'deploy', 'helm', 'validate');
const KUBE_VERSION = '1.33.0';
const NAMESPACE = 'fc-test';
const RELEASE = 'fc';
const FULL = `${RELEASE}-facecompute`;
const COMPONENTS = ['gateway', 'mcp', 'console', 'model-server'] as const;
type Component = (typeof COMPONENTS)[number];
/** The variables the chart sets itself; values.schema.json allows every other one in `config`. */
const MANAGED = [
  'FACECOMPUTE_HOST', 'FACECOMPUTE_GATEWAY_PORT', 'FACECOMPUTE_MCP_PORT', 'FACECOMPUTE_CONSOLE_PORT', 'FACECOMPUTE_MODEL_SERVER_PORT',
  'FACECOMPUTE_MODEL_SERVER_HOST', 'FACECOMPUTE_INTERNAL_TOKEN', 'FACECOMPUTE_MODEL_SERVER_DNS', 'FACECOMPUTE_METRICS_PORT',
  'FACECOMPUTE_METRICS_HOST', 'FACECOMPUTE_DATA_DIR', 'FACECOMPUTE_DATABASE_URL', 'FACECOMPUTE_REDIS_URL', 'FACECOMPUTE_STRIPE_SECRET_KEY',
  'FACECOMPUTE_DRAIN_TIMEOUT_MS', 'FACECOMPUTE_MODELS_CACHE', 'FACECOMPUTE_ORT_PROVIDER', 'FACECOMPUTE_PRODUCTION',
  'FACECOMPUTE_STRIPE_WEBHOOK_SECRET', 'FACECOMPUTE_SMTP_URL', 'FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES',
];
/** The secret variables each component may hold (issue 24: each component gets only its own secrets). */
const SECRETS_OF: Record<Component, string[]> = {
  gateway: ['FACECOMPUTE_DATABASE_URL', 'FACECOMPUTE_REDIS_URL', 'FACECOMPUTE_INTERNAL_TOKEN'],
  mcp: ['FACECOMPUTE_DATABASE_URL', 'FACECOMPUTE_REDIS_URL', 'FACECOMPUTE_INTERNAL_TOKEN'],
  console: ['FACECOMPUTE_DATABASE_URL', 'FACECOMPUTE_STRIPE_SECRET_KEY', 'FACECOMPUTE_STRIPE_WEBHOOK_SECRET', 'FACECOMPUTE_SMTP_URL'],
  'model-server': ['FACECOMPUTE_INTERNAL_TOKEN'],
};
const DB_URL = 'postgres://facecompute:pw@db.example:5432/facecompute';

// ---- tools: fail loudly, never skip ---------------------------------------------------------------
function goEnv(name: string): string | null {
  try {
    return execFileSync('go', ['env', name], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}
const GOPATH = goEnv('GOPATH') ?? join(homedir(), 'go');
const HELM = [process.env['HELM_BIN'], join(GOPATH, 'bin', 'helm')].find((p): p is string => Boolean(p && existsSync(p)));
if (!HELM) throw new Error(`helm not found (HELM_BIN or ${join(GOPATH, 'bin', 'helm')}): go install helm.sh/helm/v3/cmd/helm@v3.22.0 (scripts/bootstrap.sh test does)`);
if (goEnv('GOROOT') === null) throw new Error('go not found: deploy/helm/validate is a Go program (Go 1.26, /usr/local/go/bin)');

const work = mkdtempSync(join(tmpdir(), 'fc-helm-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const VALIDATE = join(work, 'validate');
{
  const started = Date.now();
  const r = spawnSync('go', ['build', '-o', VALIDATE, '.'], { cwd: VALIDATOR_SRC, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`go build deploy/helm/validate failed:\n${r.stdout}${r.stderr}`);
  t.comment(`deploy/helm/validate built in ${Date.now() - started} ms`);
}

function run(cmd: string, args: string[], input?: string): { status: number; out: string; err: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 64 << 20, env: { ...process.env, HELM_CACHE_HOME: join(work, 'cache'), HELM_CONFIG_HOME: join(work, 'config'), HELM_DATA_HOME: join(work, 'data') } });
  return { status: r.status ?? -1, out: r.stdout, err: r.stderr };
}
function yamlToJson(path: string): any {
  const r = run(VALIDATE, ['-yaml2json'], readFileSync(path, 'utf8'));
  if (r.status !== 0) throw new Error(`${path}: ${r.out}`);
  return JSON.parse(r.out);
}

// ---- the chart as CI can render it --------------------------------------------------------------------
// Chart.yaml lists the optional subcharts; `helm template` refuses a chart whose dependencies are not
// in charts/ even when their conditions are off, and fetching them needs the network. The copy renders
// without the list, which is checked here instead.
const chartMeta = yamlToJson(join(CHART, 'Chart.yaml'));
const RENDERABLE = join(work, 'facecompute');
cpSync(CHART, RENDERABLE, { recursive: true });
{
  const text = readFileSync(join(CHART, 'Chart.yaml'), 'utf8');
  const cut = text.indexOf('\ndependencies:');
  if (cut < 0) throw new Error('Chart.yaml: no dependencies list');
  writeFileSync(join(RENDERABLE, 'Chart.yaml'), text.slice(0, cut) + '\n');
}
const defaults = yamlToJson(join(CHART, 'values.yaml'));
const production = yamlToJson(join(CHART, 'values-production.yaml'));
const gpuValues = yamlToJson(join(CHART, 'values-gpu.yaml'));

function template(args: string[], chart = RENDERABLE): { status: number; out: string; err: string } {
  return run(HELM!, ['template', RELEASE, chart, '--namespace', NAMESPACE, '--kube-version', KUBE_VERSION, ...args]);
}
const valuesFile = (name: string) => ['-f', join(CHART, name)];

interface Obj {
  apiVersion: string;
  kind: string;
  name: string;
  object: any;
}
interface Render {
  objects: Obj[];
  one(kind: string, name: string): any;
  all(kind: string): any[];
}
/** helm template, then the validator on its output; both must succeed. */
function render(t: Tap.Test, args: string[]): Render {
  const h = template(args);
  if (h.status !== 0) throw new Error(`helm template ${args.join(' ')} failed:\n${h.err}`);
  const v = run(VALIDATE, [], h.out);
  t.equal(v.status, 0, `the rendered manifests pass deploy/helm/validate (${args.join(' ')})`, { output: v.out.slice(0, 4000) });
  const objects = (JSON.parse(v.out) as { objects: Obj[] }).objects;
  return {
    objects,
    one(kind, name) {
      const o = objects.find((x) => x.kind === kind && x.name === name);
      if (!o) throw new Error(`no ${kind} ${name} in the render`);
      return o.object;
    },
    all: (kind) => objects.filter((x) => x.kind === kind).map((x) => x.object),
  };
}
const counts = (r: Render) => Object.fromEntries([...new Set(r.objects.map((o) => o.kind))].sort().map((k) => [k, r.objects.filter((o) => o.kind === k).length]));
const container = (r: Render, c: Component) => r.one('Deployment', `${FULL}-${c}`).spec.template.spec.containers[0];
const envOf = (ctr: any): Map<string, any> => new Map((ctr.env ?? []).map((e: any) => [e.name, e]));
const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/**
 * A pod's environment as the kubelet builds it (the image's ENV, then envFrom, then env), with secret
 * references resolved from the rendered Secret or from stand-ins for a Secret the operator creates.
 */
function podEnv(r: Render, c: Component, external: Record<string, Record<string, string>>, image: Record<string, string>): Record<string, string> {
  const ctr = container(r, c);
  const env: Record<string, string> = { ...image };
  for (const from of ctr.envFrom ?? []) Object.assign(env, r.one('ConfigMap', from.configMapRef.name).data);
  for (const e of ctr.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) {
      const { name, key, optional } = e.valueFrom.secretKeyRef;
      const rendered = r.objects.find((o) => o.kind === 'Secret' && o.name === name)?.object;
      const data = rendered ? { ...rendered.stringData, ...Object.fromEntries(Object.entries(rendered.data ?? {}).map(([k, v]) => [k, Buffer.from(String(v), 'base64').toString()])) } : external[name];
      if (!data) throw new Error(`${c}: ${e.name} refers to Secret ${name}, neither rendered nor expected`);
      if (data[key] !== undefined) env[e.name] = data[key]!;
      else if (!optional) throw new Error(`${c}: ${e.name} refers to key ${key} of Secret ${name}, which it lacks`);
    }
  }
  return env;
}

/** The Dockerfile's runtime targets: their USER and ENV, which the pods must agree with. */
function dockerTarget(target: string): { user: string; env: Record<string, string> } {
  const text = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const stage = text.split(/^FROM /m).find((s) => new RegExp(`\\bAS ${target}\\s*$`, 'm').test(s.split('\n')[0]!));
  if (!stage) throw new Error(`Dockerfile: no stage ${target}`);
  const env: Record<string, string> = {};
  for (const m of stage.matchAll(/^ENV (.*)$/gm)) for (const kv of m[1]!.matchAll(/(\w+)=(\S+)/g)) env[kv[1]!] = kv[2]!;
  return { user: /^USER (\S+)/m.exec(stage)![1]!, env };
}

/**
 * The NetworkPolicies (issue 24): one per tier, each restricting ingress and egress. Who may connect in:
 * the Ingress controller to gateway, MCP and console; Prometheus to the gateways' metrics port; gateway
 * and MCP pods to the model servers. Where each may connect out: DNS everywhere but the model servers;
 * the model servers, PostgreSQL and Redis from gateway and MCP; PostgreSQL, HTTPS and SMTP from the
 * console; nothing from the model servers. No rule admits every pod or every address.
 */
function checkNetworkPolicies(t: Tap.Test, r: Render, values: any, podLabels: Record<Component, Record<string, string>>): void {
  const np = values.networkPolicy;
  const policies = r.all('NetworkPolicy');
  t.equal(policies.length, COMPONENTS.length, 'one NetworkPolicy per tier');
  const portsOf = (rule: any) => (rule.ports ?? []).map((p: any) => `${p.protocol}/${p.port}`).sort();
  const isIngressController = (p: any) => JSON.stringify(p) === JSON.stringify({ podSelector: np.ingressController.podSelector, namespaceSelector: np.ingressController.namespaceSelector });
  const isPrometheus = (p: any) => JSON.stringify(p) === JSON.stringify({ podSelector: np.prometheus.podSelector, namespaceSelector: np.prometheus.namespaceSelector });
  const isDns = (rule: any) => rule.to?.length === 1 && rule.to[0].namespaceSelector && JSON.stringify(rule.to[0].podSelector) === JSON.stringify(np.egress.dns.podSelector);
  const remote = String(values.config?.FACECOMPUTE_REMOTE_IMAGES ?? 'off') !== 'off';
  for (const c of COMPONENTS) {
    const p = r.one('NetworkPolicy', `${FULL}-${c}`);
    t.ok(matches(p.spec.podSelector.matchLabels, podLabels[c]), `${c}: its NetworkPolicy selects its pods`);
    for (const other of COMPONENTS.filter((x) => x !== c)) t.notOk(matches(p.spec.podSelector.matchLabels, podLabels[other]), `${c}: and not ${other} pods`);
    t.same(p.spec.policyTypes, ['Ingress', 'Egress'], `${c}: ingress and egress are restricted`);
    const ingress = p.spec.ingress as any[];
    const egress = (p.spec.egress ?? []) as any[];
    // Nobody is admitted by an empty rule or peer (which would admit every pod or address).
    for (const rule of [...ingress, ...egress]) {
      const peers = rule.from ?? rule.to;
      t.ok(peers === undefined ? rule.ports?.length > 0 : peers.length > 0, `${c}: a rule without peers is limited to its ports`);
      for (const peer of peers ?? []) t.ok(peer.ipBlock || (peer.podSelector && Object.keys(peer.podSelector.matchLabels ?? {}).length > 0), `${c}: no peer selects every pod (${JSON.stringify(peer)})`);
    }
    if (c === 'model-server') {
      t.equal(ingress.length, 1, 'model server: one ingress rule');
      const admitted = COMPONENTS.filter((x) => ingress[0].from.some((peer: any) => peer.podSelector && !peer.namespaceSelector && !peer.ipBlock && matches(peer.podSelector.matchLabels, podLabels[x])));
      t.same(admitted, ['gateway', 'mcp'], 'model server: only gateway and MCP pods may connect');
      t.same(portsOf(ingress[0]), ['TCP/http'], 'model server: to its port only');
      t.same(egress, [], 'model server: connects to nothing (its models are in the image)');
      continue;
    }
    // In: the Ingress controller on http; the gateways' metrics from Prometheus only.
    const fromIngress = ingress.filter((rule) => rule.from.every(isIngressController));
    t.same(fromIngress.map(portsOf), [['TCP/http']], `${c}: the Ingress controller reaches its http port`);
    const metricsRules = ingress.filter((rule) => portsOf(rule).includes('TCP/metrics'));
    if (c === 'gateway' && values.metrics.enabled) {
      t.equal(metricsRules.length, 1, 'gateway: one rule for the metrics port');
      t.ok(metricsRules[0].from.every(isPrometheus), 'gateway: the metrics port admits Prometheus only');
    } else t.same(metricsRules, [], `${c}: no metrics port open`);
    t.equal(ingress.length, fromIngress.length + metricsRules.length, `${c}: no other ingress rule`);
    // Out.
    t.equal(egress.filter(isDns).length, 1, `${c}: DNS`);
    const toModelServers = egress.filter((rule) => rule.to?.some((peer: any) => peer.podSelector && matches(peer.podSelector.matchLabels, podLabels['model-server'])));
    const internet = egress.filter((rule) => rule.to?.some((peer: any) => peer.ipBlock?.cidr === '0.0.0.0/0'));
    for (const rule of internet) {
      const block = rule.to[0].ipBlock;
      for (const cidr of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']) t.ok(block.except.includes(cidr), `${c}: internet egress excludes ${cidr}`);
    }
    const ports = (rules: any[]) => rules.flatMap(portsOf).sort();
    if (c === 'console') {
      t.same(toModelServers, [], 'console: no connection to the model servers');
      t.notOk(egress.some((rule) => portsOf(rule).includes(`TCP/${np.egress.redis.port}`)), 'console: no Redis');
      t.same(ports(internet), ['TCP/443', ...np.egress.smtpPorts.map((p: number) => `TCP/${p}`)].sort(), 'console: out to Stripe (443) and SMTP only');
    } else {
      t.equal(toModelServers.length, 1, `${c}: reaches the model servers`);
      t.same(portsOf(toModelServers[0]), [`TCP/${values.modelServer.port}`], `${c}: on their port`);
      t.ok(egress.some((rule) => portsOf(rule).includes(`TCP/${np.egress.redis.port}`)), `${c}: reaches Redis`);
      t.same(ports(internet), remote ? ['TCP/443'] : [], `${c}: ${remote ? 'HTTPS out for remote images' : 'no internet (FACECOMPUTE_REMOTE_IMAGES=off)'}`);
    }
    t.ok(egress.some((rule) => portsOf(rule).includes(`TCP/${np.egress.database.port}`)), `${c}: reaches PostgreSQL`);
  }
}

/** What every render must satisfy, whatever its values. */
function checkStructure(t: Tap.Test, r: Render, values: any, opts: { external: Record<string, Record<string, string>>; gpu: boolean }): void {
  const spec = new Set<string>(VARS.map((v) => v.name));
  const config = r.one('ConfigMap', `${FULL}-config`).data as Record<string, string>;
  const drainMs = Number(config['FACECOMPUTE_DRAIN_TIMEOUT_MS']);
  t.equal(drainMs, values.drain.timeoutSeconds * 1000, 'FACECOMPUTE_DRAIN_TIMEOUT_MS comes from drain.timeoutSeconds');

  // Four Deployments, one command each.
  const deployments = r.all('Deployment');
  t.same(deployments.map((d) => d.metadata.name).sort(), COMPONENTS.map((c) => `${FULL}-${c}`).sort(), 'separate Deployments for gateway, MCP, console and model server');
  const podLabels = Object.fromEntries(COMPONENTS.map((c) => [c, r.one('Deployment', `${FULL}-${c}`).spec.template.metadata.labels])) as Record<Component, Record<string, string>>;
  const cpuImage = dockerTarget('runtime');
  const cudaImage = dockerTarget('runtime-cuda');
  const uid = Number(cpuImage.user.split(':')[0]);
  t.equal(cudaImage.user, cpuImage.user, 'both images run as the same user');

  for (const c of COMPONENTS) {
    const d = r.one('Deployment', `${FULL}-${c}`);
    const pod = d.spec.template.spec;
    const ctr = container(r, c);
    const vals = c === 'model-server' ? values.modelServer : values[c];
    t.same(ctr.args, [c], `${c}: runs \`facecompute ${c}\``);
    const annotations = d.spec.template.metadata.annotations ?? {};
    t.match(annotations['checksum/config'], /^[0-9a-f]{64}$/, `${c}: rolls when the configuration changes`);
    t.same(Object.keys(annotations).filter((k) => /secret/i.test(k)), [], `${c}: no hash of the secrets in the pod's annotations`);
    t.equal(d.spec.replicas === undefined, vals.autoscaling.enabled, `${c}: replicas left to the HPA exactly when autoscaling`);
    // Probes.
    const http = ctr.ports.find((p: any) => p.name === 'http');
    const portVar = { gateway: 'FACECOMPUTE_GATEWAY_PORT', mcp: 'FACECOMPUTE_MCP_PORT', console: 'FACECOMPUTE_CONSOLE_PORT', 'model-server': 'FACECOMPUTE_MODEL_SERVER_PORT' }[c];
    t.equal(String(http.containerPort), config[portVar], `${c}: the container port is the one ${portVar} makes it listen on`);
    t.same(ctr.readinessProbe.httpGet, { path: '/readiness', port: 'http' }, `${c}: readiness → /readiness`);
    t.same(ctr.livenessProbe.httpGet, { path: '/health', port: 'http' }, `${c}: liveness → /health`);
    t.same(ctr.startupProbe.httpGet, { path: '/health', port: 'http' }, `${c}: startupProbe on /health`);
    const startupBudget = ctr.startupProbe.periodSeconds * ctr.startupProbe.failureThreshold;
    // The whole service's cold start with every model warmed was 8.3 s on 2 shared cores (README,
    // Resilience); a model server loads and warms every model before it listens.
    if (c === 'model-server') t.ok(startupBudget >= 300, `model server: the startupProbe allows ${startupBudget} s for loading and warming the models`);
    else t.ok(startupBudget >= 30, `${c}: the startupProbe allows ${startupBudget} s`);
    // Shutdown: the preStop pause, then SIGTERM and the drain, within the grace period.
    const preStop = ctr.lifecycle.preStop.sleep.seconds;
    t.equal(preStop, values.drain.preStopSeconds, `${c}: preStop sleeps drain.preStopSeconds`);
    t.equal(pod.terminationGracePeriodSeconds, preStop + drainMs / 1000 + values.drain.marginSeconds, `${c}: terminationGracePeriodSeconds = preStop + drain + margin`);
    // The gateway exits on its own at most 2 s after the drain timeout (src/gateway/main.ts).
    t.ok(pod.terminationGracePeriodSeconds >= preStop + drainMs / 1000 + 2, `${c}: the grace period outlasts the drain (${pod.terminationGracePeriodSeconds} s)`);
    // Security matching the image: non-root uid, read-only root, writable /tmp and data directory.
    t.equal(pod.securityContext.runAsUser, uid, `${c}: runs as the image's uid ${uid}`);
    t.equal(pod.securityContext.runAsNonRoot, true, `${c}: runAsNonRoot`);
    t.equal(ctr.securityContext.readOnlyRootFilesystem, true, `${c}: read-only root filesystem`);
    t.equal(ctr.securityContext.allowPrivilegeEscalation, false, `${c}: no privilege escalation`);
    t.same(ctr.securityContext.capabilities.drop, ['ALL'], `${c}: every capability dropped`);
    const mounts = new Map(ctr.volumeMounts.map((m: any) => [m.mountPath, m.name]));
    for (const path of ['/tmp', config['FACECOMPUTE_DATA_DIR']!]) {
      const vol = pod.volumes.find((v: any) => v.name === mounts.get(path));
      t.ok(vol?.emptyDir, `${c}: ${path} is an emptyDir`);
    }
    t.equal(config['FACECOMPUTE_DATA_DIR'], cpuImage.env['FACECOMPUTE_DATA_DIR'], 'the data directory is the one the image prepares');
    // Secrets: what each component holds.
    const env = envOf(ctr);
    const holds = (name: string) => env.get(name)?.valueFrom?.secretKeyRef !== undefined;
    t.equal(holds('FACECOMPUTE_INTERNAL_TOKEN'), c !== 'console', `${c}: ${c === 'console' ? 'no' : 'the'} internal token, from a Secret`);
    t.equal(holds('FACECOMPUTE_DATABASE_URL'), c !== 'model-server', `${c}: ${c === 'model-server' ? 'no' : 'the'} database URL, from a Secret`);
    const secretVars = [...env.values()].filter((e: any) => e.valueFrom?.secretKeyRef).map((e: any) => e.name);
    t.same(secretVars.filter((n) => !SECRETS_OF[c].includes(n)), [], `${c}: no secret but its own (${secretVars.join(', ')})`);
    // Discovery of the model servers through the headless Service.
    if (c === 'gateway' || c === 'mcp') {
      t.equal(env.get('FACECOMPUTE_MODEL_SERVER_DNS')?.value, `http://${FULL}-model-server-headless.${NAMESPACE}.svc.cluster.local:${config['FACECOMPUTE_MODEL_SERVER_PORT']}`, `${c}: finds the model servers through the headless Service`);
    }
    // GPU.
    const gpu = c === 'model-server' && opts.gpu;
    t.equal(ctr.resources.limits?.['nvidia.com/gpu'] !== undefined, gpu, `${c}: ${gpu ? 'an' : 'no'} nvidia.com/gpu limit`);
    t.equal(ctr.image.endsWith('-cuda'), gpu, `${c}: the ${gpu ? 'CUDA' : 'CPU'} image (${ctr.image})`);
    // The service accepts this configuration, as the pod would start it.
    const external = opts.external;
    const full = podEnv(r, c, external, gpu ? cudaImage.env : cpuImage.env);
    for (const name of Object.keys(full).filter((k) => k.startsWith('FACECOMPUTE_'))) t.ok(spec.has(name), `${c}: ${name} is a variable of src/config/spec.ts`);
    const cfg = loadConfig(full);
    t.equal(cfg.capacity.drainTimeoutMs, drainMs, `${c}: loadConfig accepts the pod's environment (drain ${drainMs} ms)`);
    t.same(startupProblems(cfg, c), [], `${c}: and its start-up checks pass (production ${cfg.production})`);
    t.equal(cfg.production, values.production === true, `${c}: FACECOMPUTE_PRODUCTION follows \`production\``);
    if (values.ingress.enabled && c !== 'model-server') {
      t.ok(cfg.accounts.trustedProxies.length > 0, `${c}: behind the Ingress, FACECOMPUTE_TRUSTED_PROXIES is set (${cfg.accounts.trustedProxies.join(',')})`);
    }
    if (c === 'model-server') {
      t.doesNotThrow(() => assertSafeBind(cfg.modelServer.host, cfg.modelServer.internalToken), 'model server: binds off loopback with the internal token');
      t.equal(cfg.modelServer.host, '0.0.0.0', 'model server: listens on the pod address');
      t.equal(cfg.models.ort.provider, gpu ? 'cuda' : 'cpu', `model server: ONNX Runtime on ${gpu ? 'CUDA' : 'the CPU'}`);
    }
  }

  // Services: the headless one selects the model servers; the others their component.
  const headless = r.one('Service', `${FULL}-model-server-headless`);
  t.equal(headless.spec.clusterIP, 'None', 'the model servers have a headless Service');
  t.ok(matches(headless.spec.selector, podLabels['model-server']) && !matches(headless.spec.selector, podLabels.gateway), 'the headless Service selects the model servers only');
  t.notOk(r.objects.some((o) => o.kind === 'Service' && o.name === `${FULL}-model-server`), 'and no load-balanced Service for them (the gateways balance)');

  if (values.networkPolicy.enabled) checkNetworkPolicies(t, r, values, podLabels);

  // PodDisruptionBudgets.
  for (const c of COMPONENTS) {
    const pdb = r.one('PodDisruptionBudget', `${FULL}-${c}`);
    t.ok(matches(pdb.spec.selector.matchLabels, podLabels[c]), `${c}: a PodDisruptionBudget selects its pods`);
  }

  // Metrics: the gateway's admin listener, a port of its Service.
  const gwEnv = envOf(container(r, 'gateway'));
  if (values.metrics.enabled) {
    t.equal(gwEnv.get('FACECOMPUTE_METRICS_PORT')?.value, String(values.metrics.port), 'the gateway serves metrics on metrics.port');
    t.equal(gwEnv.get('FACECOMPUTE_METRICS_HOST')?.value, '0.0.0.0', 'reachable by Prometheus');
    t.ok(r.one('Service', `${FULL}-gateway`).spec.ports.some((p: any) => p.name === 'metrics' && p.port === values.metrics.port), 'the gateway Service exposes it as "metrics"');
  }
  const sms = r.all('ServiceMonitor');
  t.equal(sms.length, values.metrics.enabled && values.metrics.serviceMonitor.enabled ? 1 : 0, `a ServiceMonitor exactly when metrics.serviceMonitor.enabled`);
  for (const sm of sms) {
    t.ok(matches(sm.spec.selector.matchLabels, r.one('Service', `${FULL}-gateway`).metadata.labels), 'the ServiceMonitor selects the gateway Service');
    t.same(sm.spec.endpoints.map((e: any) => [e.port, e.path]), [['metrics', '/metrics']], 'and scrapes its metrics port');
  }

  // Every Secret reference resolves (the chart's Secret has the key, or the Secret is one the operator makes).
  const rendered = new Set(r.all('Secret').map((s) => s.metadata.name));
  for (const d of deployments) {
    for (const e of d.spec.template.spec.containers[0].env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      if (!ref) continue;
      if (rendered.has(ref.name)) t.ok(ref.optional || ref.key in (r.one('Secret', ref.name).stringData ?? {}), `${d.metadata.name}: ${e.name} ← ${ref.name}/${ref.key}`);
      else t.ok(ref.name in opts.external, `${d.metadata.name}: ${e.name} ← ${ref.name}/${ref.key}, a Secret expected outside the chart`);
    }
  }
}

t.test('Chart.yaml: the optional subcharts, and why CI renders a copy without them', async (t) => {
  t.same(
    chartMeta.dependencies.map((d: any) => [d.name, d.alias ?? d.name, d.condition]),
    [['cluster', 'postgresql', 'postgresql.enabled'], ['valkey', 'valkey', 'valkey.enabled']],
    'CloudNativePG cluster (as postgresql) and Valkey, each behind its condition',
  );
  for (const d of chartMeta.dependencies) {
    t.match(d.version, /^\d+\.\d+\.\d+$/, `${d.name}: an exact version`);
    t.match(d.repository, /^https:\/\//, `${d.name}: from an https chart repository`);
  }
  t.equal(defaults.postgresql.enabled, false, 'PostgreSQL subchart off by default');
  t.equal(defaults.valkey.enabled, false, 'Valkey subchart off by default');
  const r = template(['--set', `secrets.databaseUrl=${DB_URL}`], CHART);
  t.not(r.status, 0, 'the chart as shipped does not render without charts/');
  t.match(r.err, /missing in charts\/ directory: cluster, valkey/, 'because the dependencies are not fetched');
});

t.test('helm lint with each values file', async (t) => {
  for (const [name, args] of [
    ['default', ['--set', `secrets.databaseUrl=${DB_URL}`]],
    ['production', valuesFile('values-production.yaml')],
    ['production + GPU', [...valuesFile('values-production.yaml'), ...valuesFile('values-gpu.yaml')]],
  ] as const) {
    const r = run(HELM!, ['lint', CHART, '--kube-version', KUBE_VERSION, ...args]);
    t.equal(r.status, 0, `${name}: helm lint passes`, { output: r.out + r.err });
    t.match(r.out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    const warnings = r.out.split('\n').filter((l) => /^\[(WARNING|ERROR)\]/.test(l));
    t.same(warnings.map((w) => w.replace(/^\[WARNING\] \S+: /, '')), ['chart directory is missing these dependencies: cluster,valkey'], `${name}: no warning but the unfetched subcharts`);
  }
});

t.test('default values (with the one required value, a database URL)', async (t) => {
  const r = render(t, ['--set', `secrets.databaseUrl=${DB_URL}`]);
  t.comment(`default: ${r.objects.length} objects ${JSON.stringify(counts(r))}`);
  checkStructure(t, r, defaults, { external: {}, gpu: false });
  t.same(r.all('HorizontalPodAutoscaler'), [], 'no HPA by default');
  const secret = r.one('Secret', `${FULL}-secrets`);
  t.match(secret.stringData['internal-token'], /^[A-Za-z0-9]{48}$/, 'an internal token generated outside production');
  t.notOk('redis-url' in secret.stringData, 'no Redis URL given, none invented');
  t.notOk(envOf(container(r, 'gateway')).has('FACECOMPUTE_REDIS_URL'), 'the gateways then limit in memory');
});

t.test('production values', async (t) => {
  const r = render(t, valuesFile('values-production.yaml'));
  t.comment(`production: ${r.objects.length} objects ${JSON.stringify(counts(r))}`);
  const values = { ...defaults, ...production, metrics: { ...defaults.metrics, ...production.metrics, serviceMonitor: { ...defaults.metrics.serviceMonitor, ...production.metrics.serviceMonitor } } };
  for (const c of ['gateway', 'mcp', 'console', 'modelServer']) values[c] = { ...defaults[c], ...production[c], autoscaling: { ...defaults[c].autoscaling, ...production[c]?.autoscaling } };
  const existing = production.secrets.existingSecret;
  checkStructure(t, r, values, { external: { [existing]: { 'database-url': DB_URL, 'redis-url': 'redis://redis.example:6379', 'internal-token': 'x'.repeat(40), 'stripe-secret-key': 'sk_test_x', 'stripe-webhook-secret': 'whsec_0123456789abcdef', 'smtp-url': 'smtps://mailer:pw@smtp.example:465' } }, gpu: false });
  t.same(r.all('Secret'), [], 'no Secret rendered: existingSecret');
  const gw = envOf(container(r, 'gateway'));
  t.same(gw.get('FACECOMPUTE_REDIS_URL').valueFrom.secretKeyRef, { name: existing, key: 'redis-url', optional: true }, 'Redis from the existing Secret');
  const hpa = r.one('HorizontalPodAutoscaler', `${FULL}-gateway`);
  t.same(hpa.spec.metrics.map((m: any) => [m.type, m.resource?.name, m.resource?.target.averageUtilization]), [['Resource', 'cpu', 70]], 'gateways scale on CPU (70%, docs/scaling.md)');
  t.ok(hpa.spec.minReplicas >= 2, 'at least 2 gateways');
  const ms = r.one('HorizontalPodAutoscaler', `${FULL}-model-server`);
  t.same(ms.spec.metrics.map((m: any) => m.type), ['Resource'], 'model servers on CPU in the production values');
  t.equal(ms.spec.metrics[0].resource.target.averageUtilization, 75, '75% (docs/scaling.md)');
  const ing = r.one('Ingress', FULL);
  const paths = ing.spec.rules[0].http.paths.map((p: any) => [p.path, p.backend.service.name]);
  t.same(paths, [['/mcp', `${FULL}-mcp`], ['/', `${FULL}-gateway`]], 'the Ingress: /mcp to the MCP endpoint, the rest to the gateways');
  // ingress-nginx refuses bodies over 1m by default: the documented 25 and 64 MiB bodies must pass.
  t.equal(ing.metadata.annotations['nginx.ingress.kubernetes.io/proxy-body-size'], String(64 * 1024 * 1024), 'the Ingress passes the largest body limit (64 MiB, /compare)');
  const bigger = render(t, [...valuesFile('values-production.yaml'), '--set', 'config.FACECOMPUTE_MAX_COMPARE_BYTES=100000000']);
  t.equal(bigger.one('Ingress', FULL).metadata.annotations['nginx.ingress.kubernetes.io/proxy-body-size'], '100000000', 'follows the configured limit');
  const own = render(t, [...valuesFile('values-production.yaml'), '--set-json', 'ingress.annotations={"nginx.ingress.kubernetes.io/proxy-body-size":"200m"}']);
  t.equal(own.one('Ingress', FULL).metadata.annotations['nginx.ingress.kubernetes.io/proxy-body-size'], '200m', "the operator's own annotation wins");
  // Database and Redis egress only to the configured addresses in production.
  for (const c of ['gateway', 'mcp', 'console'] as const) {
    const egress = r.one('NetworkPolicy', `${FULL}-${c}`).spec.egress as any[];
    const db = egress.filter((rule) => rule.ports?.some((p: any) => p.port === 5432));
    t.same(db.map((rule) => rule.to), [production.networkPolicy.egress.database.to], `${c}: PostgreSQL only at its configured address`);
    if (c !== 'console') t.same(egress.filter((rule) => rule.ports?.some((p: any) => p.port === 6379)).map((rule) => rule.to), [production.networkPolicy.egress.redis.to], `${c}: Redis only at its configured address`);
  }
  const config = r.one('ConfigMap', `${FULL}-config`).data;
  t.equal(config['FACECOMPUTE_PUBLIC_BASE_URL'], `https://${production.ingress.host}`, 'public URLs from the Ingress host, https with TLS');
});

t.test('GPU values (on top of production)', async (t) => {
  const r = render(t, [...valuesFile('values-production.yaml'), ...valuesFile('values-gpu.yaml')]);
  t.comment(`production + GPU: ${r.objects.length} objects ${JSON.stringify(counts(r))}`);
  const d = r.one('Deployment', `${FULL}-model-server`);
  const ctr = d.spec.template.spec.containers[0];
  t.equal(ctr.resources.limits['nvidia.com/gpu'], '1', 'one GPU per model server');
  t.same(d.spec.template.spec.nodeSelector, gpuValues.modelServer.nodeSelector, 'on GPU nodes');
  t.same(d.spec.template.spec.tolerations, gpuValues.modelServer.tolerations, 'tolerating their taint');
  t.ok(d.spec.template.spec.tolerations.some((x: any) => x.key === 'nvidia.com/gpu'), 'the nvidia.com/gpu taint');
  t.equal(envOf(ctr).get('FACECOMPUTE_ORT_PROVIDER').value, 'cuda', 'FACECOMPUTE_ORT_PROVIDER=cuda');
  t.match(ctr.image, /:0\.1\.0-cuda$/, 'the runtime-cuda image');
  for (const c of ['gateway', 'mcp', 'console'] as const) t.notOk(r.one('Deployment', `${FULL}-${c}`).spec.template.spec.nodeSelector, `${c} stays off the GPU nodes`);
  // The queue-wait HPA: the External metric the Prometheus adapter rule of docs/scaling.md serves.
  const hpa = r.one('HorizontalPodAutoscaler', `${FULL}-model-server`);
  const ext = hpa.spec.metrics.find((m: any) => m.type === 'External').external;
  const metricsSrc = readFileSync(join(REPO_ROOT, 'src', 'gateway', 'metrics.ts'), 'utf8');
  t.ok(metricsSrc.includes(`name: '${ext.metric.name}'`), `${ext.metric.name} is a metric the gateway exports`);
  t.ok(readFileSync(join(REPO_ROOT, 'docs', 'scaling.md'), 'utf8').includes(`as: ${ext.metric.name}`), 'and the name docs/scaling.md\'s adapter rule serves');
  t.same(ext.metric.selector.matchLabels, { service: `${FULL}-gateway` }, 'selected by this release\'s gateway Service');
  t.ok(r.objects.some((o) => o.kind === 'Service' && o.name === ext.metric.selector.matchLabels.service), 'which exists');
  t.same(ext.target, { type: 'Value', value: '250m' }, 'target 0.25 s');
  t.ok(hpa.spec.metrics.some((m: any) => m.type === 'Resource' && m.resource.name === 'cpu'), 'CPU still counts');
  t.equal(hpa.spec.behavior.scaleDown.stabilizationWindowSeconds, 300, 'scale-down waits 5 minutes');
  t.equal(r.all('ServiceMonitor').length, 1, 'the ServiceMonitor that feeds it');
});

t.test('one value drives shutdown; subcharts wire themselves; numbers stay integers', async (t) => {
  const r = render(t, ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'drain.timeoutSeconds=90', '--set', 'drain.preStopSeconds=3', '--set', 'metrics.serviceMonitor.enabled=true', '--set', 'networkPolicy.enabled=false']);
  const values = { ...defaults, drain: { ...defaults.drain, timeoutSeconds: 90, preStopSeconds: 3 }, metrics: { ...defaults.metrics, serviceMonitor: { ...defaults.metrics.serviceMonitor, enabled: true } }, networkPolicy: { enabled: false } };
  checkStructure(t, r, values, { external: {}, gpu: false });
  t.equal(r.one('Deployment', `${FULL}-gateway`).spec.template.spec.terminationGracePeriodSeconds, 3 + 90 + defaults.drain.marginSeconds, 'grace 98 s for a 90 s drain');
  t.same(r.all('NetworkPolicy'), [], 'networkPolicy.enabled=false renders none');

  const sub = render(t, ['--set', 'postgresql.enabled=true', '--set', 'valkey.enabled=true']);
  const ref = envOf(container(sub, 'gateway')).get('FACECOMPUTE_DATABASE_URL').valueFrom.secretKeyRef;
  t.same(ref, { name: `${RELEASE}-postgresql-app`, key: 'uri' }, 'the database URL from the CloudNativePG application Secret');
  t.equal(sub.one('Secret', `${FULL}-secrets`).stringData['redis-url'], `redis://${RELEASE}-valkey.${NAMESPACE}.svc.cluster.local:6379`, 'Redis at the Valkey Service');
  checkStructure(t, sub, { ...defaults, postgresql: { enabled: true }, valkey: { enabled: true } }, { external: { [`${RELEASE}-postgresql-app`]: { uri: 'postgresql://app:pw@fc-postgresql-rw:5432/app' } }, gpu: false });

  const file = join(work, 'numbers.yaml');
  writeFileSync(file, 'config:\n  FACECOMPUTE_MAX_REQUEST_BYTES: 26214400\n  FACECOMPUTE_FALLBACK_CENTRE_SPAN: 0.5\n  FACECOMPUTE_MCP_STRICT_URLS: true\nmodelServer:\n  env:\n    FACECOMPUTE_BATCH_MAX: 64\n');
  const n = render(t, ['--set', `secrets.databaseUrl=${DB_URL}`, '-f', file]);
  const data = n.one('ConfigMap', `${FULL}-config`).data;
  t.same([data['FACECOMPUTE_MAX_REQUEST_BYTES'], data['FACECOMPUTE_FALLBACK_CENTRE_SPAN'], data['FACECOMPUTE_MCP_STRICT_URLS']], ['26214400', '0.5', 'true'], 'YAML numbers and booleans as the service reads them (not 2.62144e+07)');
  t.equal(envOf(container(n, 'model-server')).get('FACECOMPUTE_BATCH_MAX').value, '64', 'per-component env too');
  checkStructure(t, n, defaults, { external: {}, gpu: false });
});

/** A memory quantity in MiB ("2560Mi", "2Gi"). */
function quantityMiB(q: unknown): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(String(q));
  if (!m) throw new Error(`not a Mi or Gi quantity: ${String(q)}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}

t.test("the model server's memory limit is set from its memory budget", async (t) => {
  const cases: Array<[string, string[], number]> = [
    ['default', ['--set', `secrets.databaseUrl=${DB_URL}`], 2048],
    ['GPU', [...valuesFile('values-production.yaml'), ...valuesFile('values-gpu.yaml')], 6144],
    ['3 GiB', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'modelServer.memoryBudgetMiB=3072', '--set', 'modelServer.resources.limits.memory=99Gi'], 3072],
  ];
  t.equal(defaults.modelServer.memoryBudgetMiB, 2048, 'the chart default is the service default, 2 GiB');
  for (const [name, args, mib] of cases) {
    const ctr = container(render(t, args), 'model-server');
    const budget = envOf(ctr).get('FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES').value;
    t.equal(budget, String(mib * 1024 * 1024), `${name}: FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES`);
    t.equal(quantityMiB(ctr.resources.requests.memory), mib, `${name}: memory request = the budget`);
    t.equal(quantityMiB(ctr.resources.limits.memory), (mib * 5) / 4, `${name}: memory limit = 5/4 of the budget`);
    const env = Object.fromEntries([...envOf(ctr)].filter(([, v]: [string, any]) => typeof v.value === 'string').map(([k, v]: [string, any]) => [k, v.value]));
    t.equal(loadConfig({ ...env, FACECOMPUTE_INTERNAL_TOKEN: 'x'.repeat(32) }).modelServer.memoryBudgetBytes, mib * 1024 * 1024, `${name}: the service reads it`);
  }
  t.equal(VARS.find((v) => v.name === 'FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES')?.default, String(2048 * 1024 * 1024), 'the service default is 2 GiB');
});

t.test('values.schema.json allows exactly the variables the chart does not set', async (t) => {
  const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8'));
  const allowed = Object.keys(schema.$defs.facecomputeVariables.properties);
  t.equal(schema.$defs.facecomputeVariables.additionalProperties, false, 'no other name');
  t.same([...allowed, ...MANAGED].sort(), VARS.map((v) => v.name).sort(), 'allowed ∪ managed = every variable of src/config/spec.ts');
  t.same(allowed.filter((n) => MANAGED.includes(n)), [], 'and no managed one is allowed');
});

t.test('misconfigurations fail at render time, with their message', async (t) => {
  const prodNoSecret = [...valuesFile('values-production.yaml'), '--set', 'secrets.existingSecret='];
  const cases: Array<[string, string[], RegExp]> = [
    ['default values without a database', [], /no database\. Set secrets\.databaseUrl .* or postgresql\.enabled=true/],
    ['production without a database URL', prodNoSecret, /no database\. Set secrets\.databaseUrl/],
    ['production without Redis', [...prodNoSecret, '--set', `secrets.databaseUrl=${DB_URL}`], /production needs Redis/],
    ['production without an internal token', [...prodNoSecret, '--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'secrets.redisUrl=redis://r:6379', '--set', 'secrets.stripeSecretKey=sk_live_x'], /production needs the model servers' internal token/],
    ['production with one gateway', [...valuesFile('values-production.yaml'), '--set', 'gateway.autoscaling.minReplicas=1'], /production needs at least 2 gateways .* got 1/],
    ['production with the test billing provider', [...valuesFile('values-production.yaml'), '--set', 'config.FACECOMPUTE_BILLING_PROVIDER=test'], /production needs config\.FACECOMPUTE_BILLING_PROVIDER=stripe/],
    ['Stripe without a key', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'config.FACECOMPUTE_BILLING_PROVIDER=stripe'], /needs secrets\.stripeSecretKey/],
    ['Stripe without a webhook secret', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'config.FACECOMPUTE_BILLING_PROVIDER=stripe', '--set', 'secrets.stripeSecretKey=sk_live_x'], /needs secrets\.stripeWebhookSecret/],
    ['production with the Ingress and no trusted proxies', [...valuesFile('values-production.yaml'), '--set-json', 'ingress.trustedProxies=[]'], /production with the Ingress needs ingress\.trustedProxies .*one client's failed sign-ins/],
    ['production without the database address', [...valuesFile('values-production.yaml'), '--set-json', 'networkPolicy.egress.database.to=[]'], /production needs networkPolicy\.egress\.database\.to/],
    ['production without the Redis address', [...valuesFile('values-production.yaml'), '--set-json', 'networkPolicy.egress.redis.to=[]'], /production needs networkPolicy\.egress\.redis\.to/],
    ['production with an Ingress without TLS', [...valuesFile('values-production.yaml'), '--set-json', 'ingress.tls=[]'], /production needs ingress\.tls/],
    ['production with the file mailer', [...valuesFile('values-production.yaml'), '--set', 'config.FACECOMPUTE_MAILER=file'], /production needs config\.FACECOMPUTE_MAILER=smtp/],
    ['queueWait without metrics', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'modelServer.autoscaling.metric=queueWait', '--set', 'metrics.enabled=false'], /queueWait needs metrics\.enabled=true/],
    ['a string where an integer belongs', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set-string', 'gateway.replicaCount=two'], /at '\/gateway\/replicaCount': got string, want integer/],
    ['an unknown autoscaling metric', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'modelServer.autoscaling.metric=gpu'], /at '\/modelServer\/autoscaling\/metric'/],
    ['a misspelt variable', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'config.FACECOMPUTE_LOG_LEVL=debug'], /at '\/config': additional properties 'FACECOMPUTE_LOG_LEVL' not allowed/],
    ['a variable the chart sets itself', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'gateway.env.FACECOMPUTE_DRAIN_TIMEOUT_MS=5'], /at '\/gateway\/env': additional properties 'FACECOMPUTE_DRAIN_TIMEOUT_MS' not allowed/],
    ['a misspelt value', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'drain.timeoutSecond=5'], /at '\/drain': additional properties 'timeoutSecond' not allowed/],
    ['a MySQL URL', ['--set', 'secrets.databaseUrl=mysql://db/fc'], /at '\/secrets\/databaseUrl'.*does not match pattern/],
    ['a short internal token', ['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'secrets.internalToken=short'], /at '\/secrets\/internalToken'.*does not match pattern/],
  ];
  for (const [name, args, message] of cases) {
    const r = template(args);
    t.not(r.status, 0, `${name}: helm template fails`);
    t.match(r.err, message, `${name}: says why`);
    t.equal(r.out.trim(), '', `${name}: renders nothing`);
  }
});

t.test('the validator refuses what the API server would', async (t) => {
  const base = template(['--set', `secrets.databaseUrl=${DB_URL}`]).out;
  const monitored = template(['--set', `secrets.databaseUrl=${DB_URL}`, '--set', 'metrics.serviceMonitor.enabled=true']).out;
  const cases: Array<[string, string, RegExp]> = [
    ['an unknown field', base.replace('revisionHistoryLimit: 5', 'revisionHistoryLimit: 5\n  replicaz: 3'), /unknown field "spec\.replicaz"/],
    ['a wrong type', base.replace('revisionHistoryLimit: 5', 'revisionHistoryLimit: five'), /revisionHistoryLimit|cannot unmarshal|json/i],
    ['an apiVersion the API no longer serves', base.replace('apiVersion: policy/v1\n', 'apiVersion: policy/v1beta1\n'), /no kind "PodDisruptionBudget" is registered for version "policy\/v1beta1"/],
    ['a Deployment selector missing its pods', base.replace(/(maxUnavailable: 0\n  selector:\n    matchLabels:\n\s+app\.kubernetes\.io\/name: facecompute\n\s+app\.kubernetes\.io\/instance: fc\n\s+app\.kubernetes\.io\/component: )gateway/, '$1gatewy'), /Deployment fc-facecompute-gateway: selector .* does not match its pod template's labels/],
    ['a NetworkPolicy peer that selects nothing', base.replace(/(- podSelector:\n\s+matchLabels:\n\s+app\.kubernetes\.io\/component: )mcp(\n\s+app\.kubernetes\.io\/instance: fc)/, '$1mpc$2'), /NetworkPolicy fc-facecompute-model-server ingress peer: selector .*component=mpc.* matches no pod template/],
    ['an egress peer that selects nothing', base.replace(/(- podSelector:\n\s+matchLabels:\n\s+app\.kubernetes\.io\/component: )model-server(\n\s+app\.kubernetes\.io\/instance: fc)/, '$1model-srv$2'), /NetworkPolicy fc-facecompute-gateway egress peer: selector .*component=model-srv.* matches no pod template/],
    ['a probe on a port the container lacks', base.replace('httpGet: {path: /readiness, port: http}', 'httpGet: {path: /readiness, port: web}'), /readinessProbe port "web" is not a port of the container/],
    ['a port name too long', base.replace('- name: metrics\n', '- name: prometheus-metrics\n'), /port name "prometheus-metrics"/],
    ['a ServiceMonitor field that does not exist', monitored.replace('path: /metrics', 'path: /metrics\n      honorLabelz: true'), /unknown field "spec\.endpoints\[0\]\.honorLabelz"/],
    ['a scrape interval Prometheus cannot read', monitored.replace('interval: 30s', 'interval: 30sec'), /"30sec" is not a Prometheus duration/],
  ];
  for (const [name, yaml, message] of cases) {
    t.ok(yaml !== base && yaml !== monitored, `${name}: the mutation applies`);
    const r = run(VALIDATE, [], yaml);
    t.equal(r.status, 1, `${name}: refused`);
    t.match(r.out, message, `${name}: says why`);
  }
});
