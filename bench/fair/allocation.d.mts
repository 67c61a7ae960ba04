/** See allocation.mjs. */
export declare function allocatedBytes(run: () => Promise<unknown>, times: number, collect: () => void): Promise<number | undefined>;
