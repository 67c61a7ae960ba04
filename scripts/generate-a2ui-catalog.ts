/**
 * Writes src/plugins/a2ui-basic-catalog.ts: the A2UI v0.9 basic catalog as the generative-ui plugin
 * reads it (`catalogOfSchema`), from the `catalog.json` that `@a2ui/web_core` publishes — the
 * schema the renderers are built from, so the model's vocabulary is the renderers'.
 * spec/plugins/a2ui-v09.spec.ts checks that the module is what this writes.
 *
 *   node --import tsx scripts/generate-a2ui-catalog.ts && npx biome format --write src/plugins/a2ui-basic-catalog.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { catalogOfSchema } from '../src/plugins/a2ui-catalog.ts';

const repo = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(resolve(repo, 'node_modules/@a2ui/web_core/package.json'), 'utf8')) as { version: string };
const schema = JSON.parse(readFileSync(resolve(repo, 'node_modules/@a2ui/web_core/src/v0_9/schemas/catalogs/basic/catalog.json'), 'utf8'));
const catalog = catalogOfSchema(schema);
const text = `import type { A2uiCatalog } from './a2ui-catalog.ts';

/**
 * The A2UI v0.9 basic catalog (${Object.keys(catalog.components).length} components), from \`@a2ui/web_core\` ${pkg.version}'s
 * \`src/v0_9/schemas/catalogs/basic/catalog.json\` by \`catalogOfSchema\`. Generated: change the
 * script or the package, not this file.
 */
export const A2UI_BASIC_CATALOG: A2uiCatalog = ${JSON.stringify(catalog, null, 2)};
`;
writeFileSync(resolve(repo, 'src/plugins/a2ui-basic-catalog.ts'), text);
console.log(`wrote src/plugins/a2ui-basic-catalog.ts (${Object.keys(catalog.components).length} components)`);
