// Fill tsx's compile cache for the files a judgement's verdict runs will load, without running
// any of them: a verdict run is guarded by Node's permission model, where esbuild (tsx's
// compiler) cannot start its worker thread and child process, so everything it would compile
// must already be in the cache it reads (keyed by content and path).
//
// node precompile.cjs SPEC.json — SPEC: {"require": [bare package specifiers of the profile's
// requireModule, e.g. "tsx/cjs"], "files": [{"path": absolute path as the run sees it, "content": text}]}.
// Each file goes through the extension handler the registration installed, with its content
// served instead of the disk's and the module's _compile replaced by a no-op: the handler
// transforms (and caches) the code, nothing executes it.
'use strict';

const fs = require('fs');
const Module = require('module');
const path = require('path');

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const requireFromProject = Module.createRequire(path.join(process.cwd(), 'package.json'));
for (const name of spec.require) {
  requireFromProject(name);
}
const readFileSync = fs.readFileSync;
let compiled = 0;
for (const { path: file, content } of spec.files) {
  const handler = Module._extensions[path.extname(file)] || Module._extensions['.js'];
  fs.readFileSync = function (target, ...rest) {
    if (target === file) {
      return rest.length && rest[0] ? content : Buffer.from(content, 'utf8');
    }
    return readFileSync.call(this, target, ...rest);
  };
  const module = new Module(file, null);
  module.filename = file;
  module.paths = Module._nodeModulePaths(path.dirname(file));
  module._compile = function () { compiled += 1; };
  try {
    handler(module, file);
  } catch (error) {
    // a file that does not compile fails its own run the same way
  } finally {
    fs.readFileSync = readFileSync;
  }
}
process.stdout.write(JSON.stringify({ compiled }) + '\n');
