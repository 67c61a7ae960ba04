/**
 * Ids that reach a store: 1–200 characters of letters, digits and `._:-`, not starting with a dot
 * (so no path, key or `..` can be escaped).
 */
export const ID_PATTERN = /^[A-Za-z0-9_:-][A-Za-z0-9._:-]{0,199}$/;

/** Whether an id may reach a store (see `ID_PATTERN`). */
export const isValidId = (id: string): boolean => ID_PATTERN.test(id) && id !== '__proto__';
