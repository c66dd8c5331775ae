'use strict';
// textStream: a generation as an async iterable of text batches plus its result promise.
// Shared by Model.stream and Conversation.stream.

// `run(options)` starts the generation with an onToken and a signal of ours and returns its
// promise; breaking out of the loop early aborts it.
function textStream(run, options = {}) {
  const chunks = [];
  let wake = null;
  let done = false;
  const controller = new AbortController();
  const outer = options.signal;
  if (outer) {
    if (outer.aborted) controller.abort(outer.reason);
    else outer.addEventListener('abort', () => controller.abort(outer.reason), { once: true });
  }
  const result = run({
    ...options,
    signal: controller.signal,
    onToken: (text) => { chunks.push(text); if (wake) { wake(); wake = null; } },
  });
  result.then(() => {}, () => {}).finally(() => { done = true; if (wake) { wake(); wake = null; } });
  return {
    result,
    async *[Symbol.asyncIterator]() {
      try {
        for (;;) {
          if (chunks.length) { yield chunks.shift(); continue; }
          if (done) break;
          await new Promise((r) => { wake = r; });
        }
        await result;  // surfaces a rejection to the iterating code
      } finally {
        if (!done) controller.abort();  // the consumer broke out early
      }
    },
  };
}

module.exports = { textStream };
