export * from './types.ts';
export { parsePattern, looksLikeFieldConditions } from './parse.ts';
export { formatPattern, formatPath, quoteValue } from './format.ts';
export { compilePattern, patternMatches, resolvePath, valueToString, primaryValue, canonicalJson, compileOp, type PatternMatcher } from './match.ts';
export { globMatch, wildcardMatch, normalizeWildcards } from './glob.ts';
export { toolIdMatch, toolIdPatternError, type ToolIdPatternError } from './tool-id.ts';
export { compileRegex, type RegexTest } from './regex.ts';
export { PatternTextSchema } from './schema.ts';
