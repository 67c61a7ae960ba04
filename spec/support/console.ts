import { afterEach, beforeEach, expect, vi } from 'vitest';

/**
 * Fails each test of the enclosing suite on any console call of these kinds: official clients
 * repair or drop what they do not like with only a warning (AG-UI's `[ag-ui]` stages, a renamed
 * tool call) or an error log, so a silent console is part of passing.
 */
export function failOnConsole(kinds: readonly ('warn' | 'error')[]): void {
  let spies: ReturnType<typeof vi.spyOn>[] = [];
  beforeEach(() => {
    spies = kinds.map((k) => vi.spyOn(console, k));
  });
  afterEach(() => {
    for (const spy of spies) {
      expect(spy).not.toHaveBeenCalled();
      spy.mockRestore();
    }
  });
}
