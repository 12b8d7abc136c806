// Entry of worker threads started from TypeScript sources (src/worker-start.ts, startWorker): tsx's --import hooks
// require() in a CommonJS file, so the worker's .ts module is required from here. Not used from dist/.
'use strict';
require(require('node:worker_threads').workerData.module);
