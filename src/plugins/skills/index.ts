export * from './skill.ts';
export * from './plugin.ts';
