import type { JsonValue } from '../contract/json.ts';

/**
 * The profile store port (book: ProfileStore): small JSON documents that outlive runs and threads,
 * addressed by an owner (an agent id) and a key (`deferred_tools.agent_priors`).
 */
export interface ProfileStore {
  read(owner: string, key: string): Promise<JsonValue | undefined>;
  write(owner: string, key: string, value: JsonValue): Promise<void>;
}

/** A profile store in memory (tests, single-process runs). Values are copied in and out. */
export class MemoryProfileStore implements ProfileStore {
  readonly #docs = new Map<string, string>();

  async read(owner: string, key: string): Promise<JsonValue | undefined> {
    const doc = this.#docs.get(JSON.stringify([owner, key]));
    return doc === undefined ? undefined : (JSON.parse(doc) as JsonValue);
  }

  async write(owner: string, key: string, value: JsonValue): Promise<void> {
    this.#docs.set(JSON.stringify([owner, key]), JSON.stringify(value));
  }
}
