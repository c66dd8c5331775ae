// GENERATED FILE - do not edit. Source: bindings/node/runtime.js (edgellm 0.1.0), as an ES
// module for the edgellm HAR. Regenerate: node bindings/harmonyos/gen.mjs
// Check: node bindings/harmonyos/gen.mjs --check
// Runtime: one entry point that routes each request on-device or to the cloud (an
// OpenAI-compatible server) as the scenario policy decides, falls back when the planned path
// fails before any text, and streams through the same onToken either way. The native side is
// NativeRuntime (src/native_runtime.cc) over edgellm::Runtime (include/edgellm/runtime.h).

// Stand-ins for what HarmonyOS's runtime may lack; the runtime's own when it has it.
const performance = globalThis.performance ?? { now: () => Date.now() };

import { textStream } from './stream.js';

const RUNTIME_KEYS = ['modelPath', 'threads', 'ctx', 'privacy', 'offline', 'latencyTargetMs',
                      'cloudTtftMs', 'preferOnDevice', 'ramBytes', 'deviceRoot', 'cloud'];

function createRuntimeClass(native, { nativeGenerateOptions, emptyStats, retain, release }) {
  class Runtime {
    #native;
    #decision;
    #onRoute;
    #tail = Promise.resolve();
    #disposed = false;
    #disposing = null;

    constructor(nativeRuntime, decision, onRoute) {
      if (!(nativeRuntime instanceof native.NativeRuntime)) {
        throw new TypeError('use Runtime.create(options) to create a Runtime');
      }
      this.#native = nativeRuntime;
      this.#decision = Object.freeze(decision);
      this.#onRoute = onRoute;
    }

    /** Reads the device and the model's memory plan (no weights) and decides the route. */
    static async create(options = {}) {
      if (options === null || typeof options !== 'object') {
        throw new TypeError('options must be an object');
      }
      if (options.onRoute !== undefined && typeof options.onRoute !== 'function') {
        throw new TypeError('options.onRoute must be a function');
      }
      const o = {};
      for (const k of RUNTIME_KEYS) if (options[k] !== undefined) o[k] = options[k];
      const nr = new native.NativeRuntime();
      retain();
      let decision;
      try {
        decision = await nr.create(o);
      } catch (err) {
        await nr.dispose();
        release();
        throw err;
      }
      return new Runtime(nr, decision, options.onRoute);
    }

    /** The standing decision: {route: "on-device"|"cloud"|"refuse", reason, localPossible,
     * localWhy}. */
    get decision() { return this.#decision; }
    get disposed() { return this.#disposed; }

    /** Loads the on-device model now when the route is on-device (a no-op otherwise). */
    prepare() {
      return this.#serial(() => this.#native.prepare());
    }

    generate(prompt, options = {}) {
      if (typeof prompt !== 'string') return Promise.reject(new TypeError('prompt must be a string'));
      const { signal, onToken } = options;
      const onRoute = options.onRoute || this.#onRoute;
      const t0 = performance.now();
      return this.#serial(() => {
        if (signal?.aborted) {
          return { text: '', finishReason: 'cancelled', stats: emptyStats(performance.now() - t0),
                   route: this.#decision.route, reason: 'aborted before it started',
                   fellBack: false, failure: '' };
        }
        const onAbort = () => this.#native.cancel();
        signal?.addEventListener('abort', onAbort, { once: true });
        let settled = false;
        let error = null;
        const p = this.#native.generate(prompt, nativeGenerateOptions(options), (kind, a, b) => {
          if (settled || this.#disposed) return;  // nothing after settle or dispose
          try {
            if (kind === 'text' && onToken) onToken(a, b);
            else if (kind === 'route' && onRoute) onRoute(a);
          } catch (err) {
            error = error || err;
            this.#native.cancel();
          }
        });
        return p.then((r) => {
          if (error) throw error;
          r.stats.queuedMs = 0;
          return r;
        }).finally(() => {
          settled = true;
          signal?.removeEventListener('abort', onAbort);
        });
      });
    }

    stream(prompt, options = {}) {
      return textStream((o) => this.generate(prompt, o), options);
    }

    /** Stops the request in flight (it resolves "cancelled"). */
    cancel() {
      if (!this.#disposed) this.#native.cancel();
    }

    dispose() {
      if (this.#disposing) return this.#disposing;
      this.#disposed = true;
      this.#native.cancel();
      this.#disposing = this.#native.dispose().then(() => { release(); });
      return this.#disposing;
    }

    // One request at a time, in call order (edgellm::Runtime serves one Generate at a time).
    #serial(start) {
      if (this.#disposed) {
        const err = new Error('edgellm: the runtime is disposed; create a new one');
        err.code = 'ERR_DISPOSED';
        return Promise.reject(err);
      }
      const run = () => start();
      const result = this.#tail.then(run, run);
      this.#tail = result.then(() => {}, () => {});
      return result;
    }
  }
  return Runtime;
}

export { createRuntimeClass };
export default { createRuntimeClass };
