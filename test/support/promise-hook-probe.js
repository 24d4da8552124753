// Preloaded into a service process by the logging e2e test (node --require): on SIGUSR2 it prints whether
// a promise hook is on (an AsyncLocalStorage in use turns one on for every promise of the process).
// With no hook, a promise's reaction runs with no async id of its own (0); with one, under the promise's id.
const { executionAsyncId } = require('node:async_hooks');

process.on('SIGUSR2', () => {
  Promise.resolve()
    .then(() => executionAsyncId())
    .then((id) => process.stdout.write(`${JSON.stringify({ promise_hook_probe: id !== 0 })}\n`));
});
