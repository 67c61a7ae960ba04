import { z } from 'zod';
import type { Clock } from './env.ts';

export const CircuitBreakerConfigSchema = z.object({
  failure_threshold: z.number().int().positive().default(5),
  cooldown_ms: z.number().int().nonnegative().default(30_000),
  half_open_max: z.number().int().positive().default(1),
});
export type CircuitBreakerConfig = z.output<typeof CircuitBreakerConfigSchema>;

export type BreakerStatus = 'closed' | 'open' | 'half_open';

interface ModelState {
  failures: number;
  lastFailure: number;
  status: BreakerStatus;
  halfOpenAttempts: number;
}

/**
 * One breaker per model (book: CircuitBreakerConfig; core-spec §11.4), on the injected clock:
 * `failure_threshold` consecutive failures open it; after `cooldown_ms` it lets `half_open_max`
 * probes through; a success closes it, a failed probe opens it again.
 */
export class CircuitBreaker {
  readonly config: CircuitBreakerConfig;
  readonly #clock: Clock;
  readonly #models = new Map<string, ModelState>();

  constructor(clock: Clock, config: Partial<CircuitBreakerConfig> = {}) {
    this.#clock = clock;
    this.config = CircuitBreakerConfigSchema.parse(config);
  }

  /** Whether a request to `model` may go now; admitting a half-open probe counts it. */
  check(model: string): boolean {
    const s = this.#models.get(model);
    if (s === undefined || s.status === 'closed') return true;
    if (s.status === 'open') {
      if (this.#clock.now() - s.lastFailure < this.config.cooldown_ms) return false;
      s.status = 'half_open';
      s.halfOpenAttempts = 1;
      return true;
    }
    if (s.halfOpenAttempts < this.config.half_open_max) {
      s.halfOpenAttempts++;
      return true;
    }
    return false;
  }

  /** Whether the model's circuit is closed: `check` would admit it without changing anything. */
  isClosed(model: string): boolean {
    const s = this.#models.get(model);
    return s === undefined || s.status === 'closed';
  }

  recordSuccess(model: string): void {
    const s = this.#models.get(model);
    if (s === undefined) return;
    s.failures = 0;
    s.halfOpenAttempts = 0;
    s.status = 'closed';
  }

  recordFailure(model: string): void {
    const s = this.#models.get(model) ?? { failures: 0, lastFailure: 0, status: 'closed' as BreakerStatus, halfOpenAttempts: 0 };
    s.failures++;
    s.lastFailure = this.#clock.now();
    if (s.status === 'half_open' || s.failures >= this.config.failure_threshold) {
      s.status = 'open';
      s.halfOpenAttempts = 0;
    }
    this.#models.set(model, s);
  }

  status(model: string): BreakerStatus {
    return this.#models.get(model)?.status ?? 'closed';
  }
}
