// List every mutant Stryker's instrumenter makes of the files named on the command line
// (paths relative to the working directory, which is the project root). Prints one JSON
// array; never runs the code it reads. Runs with the project's own node_modules.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const { Instrumenter } = await import(pathToFileURL(require.resolve('@stryker-mutator/instrumenter')).href);
const quiet = () => {};
const logger = { isDebugEnabled: () => false, isTraceEnabled: () => false, isInfoEnabled: () => false,
  debug: quiet, trace: quiet, info: quiet, warn: quiet, error: quiet, fatal: quiet };
const files = process.argv.slice(2).map((name) => ({ name, content: fs.readFileSync(name, 'utf8'), mutate: true }));
const result = await new Instrumenter(logger).instrument(files,
  { plugins: null, excludedMutations: [], ignorers: [], noHeader: true });
process.stdout.write(JSON.stringify(result.mutants.map((m) => ({
  file: m.fileName, mutator: m.mutatorName, replacement: m.replacement,
  // Babel's locations: 1-based lines after our +1, 0-based columns
  start: { line: m.location.start.line + 1, column: m.location.start.column },
  end: { line: m.location.end.line + 1, column: m.location.end.column },
}))));
