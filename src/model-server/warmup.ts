/**
 * The warmup state machine: warming → ready | error, and ready → error when the inference thread
 * stops (inference_thread_stopped). Ready means a synthetic inference succeeded
 * for every configured prewarm model and detector. Raw exception text goes to logs only; callers
 * see the symbolic code `runtime_warmup_failed`.
 */
export type WarmupStatus = 'warming' | 'ready' | 'error';

export interface WarmupSnapshot {
  status: WarmupStatus;
  warmedModels: string[];
  warmedDetectors: string[];
  error: string;
  warmedAt: string | null;
}

export class Warmup {
  private status: WarmupStatus = 'warming';
  private readonly models: string[] = [];
  private readonly detectors: string[] = [];
  private error = '';
  private warmedAt: string | null = null;

  markModel(name: string): void {
    if (!this.models.includes(name)) this.models.push(name);
  }

  markDetector(name: string): void {
    if (!this.detectors.includes(name)) this.detectors.push(name);
  }

  succeed(): void {
    if (this.status !== 'warming') return;
    this.status = 'ready';
    this.warmedAt = new Date().toISOString();
  }

  fail(code = 'runtime_warmup_failed'): void {
    this.status = 'error';
    this.error = code;
  }

  get ready(): boolean {
    return this.status === 'ready';
  }

  snapshot(): WarmupSnapshot {
    return {
      status: this.status,
      warmedModels: [...this.models],
      warmedDetectors: [...this.detectors],
      error: this.error,
      warmedAt: this.warmedAt,
    };
  }
}
