// GENERATED FILE - do not edit. Source: bindings/node/stream.js (edgellm 0.1.0), as an ES
// module for the edgellm HAR. Regenerate: node bindings/harmonyos/gen.mjs
// Check: node bindings/harmonyos/gen.mjs --check
// textStream: a generation as an async iterable of text batches plus its result promise.
// Shared by Model.stream and Conversation.stream.

// Stand-ins for what HarmonyOS's runtime may lack; the runtime's own when it has it.
const AbortController = globalThis.AbortController ?? class AbortController {
  #listeners = [];
  signal = {
    aborted: false,
    reason: undefined,
    addEventListener: (type, fn) => {
      if (type === 'abort' && !this.signal.aborted) this.#listeners.push(fn);
    },
    removeEventListener: (type, fn) => {
      const i = this.#listeners.indexOf(fn);
      if (i >= 0) this.#listeners.splice(i, 1);
    },
  };

  abort(reason) {
    if (this.signal.aborted) return;
    this.signal.aborted = true;
    this.signal.reason = reason;
    for (const fn of this.#listeners.splice(0)) fn();
  }
};

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

export { textStream };
export default { textStream };
