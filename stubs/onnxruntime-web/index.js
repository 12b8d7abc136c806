'use strict';
// See stubs/README.md: retrieval-sweep's package.json overrides install this stub instead of the real package,
// which this tool never loads. Reaching this line means a new code path loads it: remove the override.
throw new Error(
  'onnxruntime-web is a stub in this install (retrieval-sweep package.json "overrides", see stubs/README.md); ' +
    'remove its override and run npm install to get the real package',
);
