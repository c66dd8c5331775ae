// edgellm for Node.js (and, by a header swap, HarmonyOS NAPI): on-device LLM inference with
// batched streaming. Everything heavy runs on a native worker thread per model; the JS thread
// only receives finished batches of text through a threadsafe function (never one crossing per
// token, never a JS call from the worker). Design and guarantees: docs/node.md.
//
// Errors reject with an Error whose `code` is "ERR_" + edgellm's status: ERR_INVALID_ARGUMENT,
// ERR_NOT_FOUND, ERR_CORRUPT_DATA, ERR_RESOURCE_EXHAUSTED, ERR_UNAVAILABLE,
// ERR_FAILED_PRECONDITION, ERR_INTERNAL; ERR_DISPOSED after dispose(); a TypeError for options
// of the wrong type; an AbortError for an aborted load or pull.

export type LoadMode = "auto" | "mmap" | "read";
export type FinishReason = "stop" | "length" | "cancelled" | "context_full" | "tool_calls";

export interface LoadOptions {
  /** Worker threads. Default: physical cores (never more). */
  threads?: number;
  /** Context length in tokens. Default: min(model's training context, 2048). */
  ctx?: number;
  /** Prompt tokens per decode call (chunked prefill). Default 512. */
  batch?: number;
  /** How weights reach memory. Default "auto" (mmap below 500 MiB, reads above). */
  loadMode?: LoadMode;
  /** Run a short inference after loading so the first request is fast. Default true. */
  warmup?: boolean;
  /** The model's projector (an mmproj .gguf made for this model): images and audio in
   * prompts (`GenerateOptions.images` / `audio`). Checked before llama.cpp reads it. */
  mmprojPath?: string;
  /** At most this many tokens per image (smaller: faster encoding, less context). Default:
   * the projector's own limit (SmolVLM: 17 tiles of 64). */
  imageMaxTokens?: number;
  /** A draft model for speculative decoding: a smaller model with this model's tokenizer
   * (Qwen2.5-0.5B for Qwen2.5-1.5B) whose guesses each decode checks
   * (`SpeculativeOptions.draft`). It gets a context of its own (plan it with
   * `planMemory(path, { draftPath })`); one with another vocabulary rejects the load. */
  draftPath?: string;
  /** Load progress in [0, 1], then the stages "warming up" and "ready". */
  onProgress?: (progress: LoadProgress) => void;
  /** Abort the load (the promise rejects with an AbortError). */
  signal?: AbortSignal;
}

export interface LoadProgress {
  stage: "loading" | "warming up" | "ready";
  /** Fraction of the weights loaded, in [0, 1]. */
  progress: number;
}

export interface ModelInfo {
  path: string;
  arch: string;
  name: string;
  description: string;
  quant: string;
  nParams: number;
  weightsBytes: number;
  fileBytes: number;
  nLayer: number;
  nEmbd: number;
  nHead: number;
  nHeadKv: number;
  nCtxTrain: number;
  nVocab: number;
  hasChatTemplate: boolean;
  loadMode: "mmap" | "read";
  loadMs: number;
  /** What the projector (LoadOptions.mmprojPath) takes; both false without one. */
  vision: boolean;
  audio: boolean;
  /** With a projector: its path and size. */
  mmprojPath?: string;
  mmprojBytes?: number;
  /** The session's resolved settings. */
  ctx: number;
  threads: number;
  batch: number;
  warmupMs: number;
}

/** An image or audio clip for a prompt: a file path, or the encoded file's bytes (a Uint8Array,
 * e.g. the photo picker's; an ArrayBuffer is taken as one). Images: JPEG, PNG, BMP, GIF; audio:
 * WAV, MP3, FLAC. */
export type MediaInput = string | Uint8Array | ArrayBuffer;

export interface GenerateOptions {
  /** New tokens at most. Default 256. */
  maxTokens?: number;
  /** Images for the prompt (the model needs LoadOptions.mmprojPath): placed at each
   * "<__media__>" in the prompt, in order, or all before its text when it has none. */
  images?: MediaInput[];
  /** Audio clips, after the images in the markers' order (a projector with an audio encoder). */
  audio?: MediaInput[];
  /** 0 = greedy. Default 0.8. */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  repeatPenalty?: number;
  /** Sampling seed; omitted = random. */
  seed?: number;
  /** Format the prompt as one user turn with the model's chat template. Default false. */
  chat?: boolean;
  systemPrompt?: string;
  /** Earlier turns, oldest first, for a stateless chat (implies chat and reusePrefix): the
   * session's KV cache keeps the longest prefix it already holds, so sending the whole history
   * every turn prefills only what is new. Conversation (model.conversation()) keeps it for you. */
  history?: ChatMessage[];
  /** Keep the longest token prefix the KV cache holds from the last call and prefill only the
   * rest (the output is the same). Default false, true with history. */
  reusePrefix?: boolean;
  /** Generation stops before any of these strings. */
  stop?: string[];
  /** Keep generating past end-of-generation tokens (benchmarks). Default false. */
  ignoreEos?: boolean;
  /** Constrain the output to this JSON Schema (an object, or its JSON text), converted to a
   * grammar by llama.cpp's converter: every token is one the schema allows, and the result
   * carries the parsed value in `json` (jsonState "complete"). A bad schema rejects with
   * ERR_INVALID_ARGUMENT naming the problem. Not with `grammar`. */
  jsonSchema?: JsonSchema | string;
  /** The whitespace jsonSchema's JSON and tool calls' arguments may have between JSON's
   * tokens: "compact" (default: at most one space at a separator, no newline, so the answer
   * does not spend maxTokens on indentation), "none", or "free" (llama.cpp's converter's own:
   * up to two newlines and 20 spaces or tabs at each separator). */
  jsonWhitespace?: "compact" | "none" | "free";
  /** Speculative decoding: each decode also checks guessed next tokens and keeps those the
   * model itself samples there, so the output is the same as without it (greedy: up to the
   * last bits of batched vs one-token logits). On by default (n-gram lookup over the prompt,
   * history and reply, and the text a grammar or schema forces); `false` turns it off. */
  speculative?: boolean | SpeculativeOptions;
  /** Constrain the output to this GBNF grammar (llama.cpp's dialect, start rule `root`). */
  grammar?: string;
  /** Tools the model may call (with chat or history), rendered by the model's own chat
   * template; calls come back in `toolCalls` with finishReason "tool_calls" and arguments that
   * follow each tool's schema. Run them and answer with a `tool` message in the history. */
  tools?: Array<ToolDefinition | OpenAITool>;
  /** "auto" (default: the model decides), "required" (a call from the first token), "none",
   * or a tool's name ({name} also works). */
  toolChoice?: "auto" | "required" | "none" | string | { name: string };
  /** Allow several calls in one reply. Default false. */
  parallelToolCalls?: boolean;
  /** A reasoning model's thinking (<think>): "separate" (default: onReasoning and `reasoning`,
   * apart from the answer), "hide" (dropped) or "inline" (left in the text). */
  reasoning?: "separate" | "hide" | "inline";
  /** Called on the JS thread with each batch of the reasoning (reasoning "separate"). */
  onReasoning?: (text: string, batch: BatchInfo) => void;
  /** Tokens per delivered batch. Default 4 (the seed: 3-5). */
  batchTokens?: number;
  /** A batch is also delivered when this many ms passed since the last one. Default 100. */
  batchMs?: number;
  /** Called on the JS thread with each batch of text (valid UTF-8, never a split character). */
  onToken?: (text: string, batch: BatchInfo) => void;
  /** Cancels: a running generation stops before its next token; a queued one never starts.
   * The promise then resolves with finishReason "cancelled" and the text produced so far. */
  signal?: AbortSignal;
  /** A grounded answer: the index's best chunks for the prompt go before it, numbered with
   * their sources (index.ground()), and the result lists them in `sources`. null: none (in a
   * conversation with an index, this turn goes without). */
  index?: DocumentIndex | null;
  /** How the chunks are found and how many (with `index`). */
  retrieval?: GroundOptions;
}

export interface BatchInfo {
  /** Index of this batch in the generation, from 0. */
  index: number;
  /** Microseconds from the worker handing the batch over to this callback running. */
  latencyUs: number;
  /** Tokens generated since the previous batch (its text may end before the last one's bytes
   * when a UTF-8 character is still incomplete), and in total so far. */
  tokens: number;
  totalTokens: number;
  /** True for a batch of a reasoning model's thinking (delivered to onReasoning). */
  reasoning?: boolean;
}

export interface GenerationStats {
  /** Prompt tokens prefilled by this call. */
  nPrompt: number;
  /** Prompt tokens reused from the KV cache (the prompt is nCached + nPrompt tokens). */
  nCached: number;
  /** Conversations: whole turns dropped to make room in the context, and their tokens. */
  turnsDropped: number;
  tokensDropped: number;
  prefillMs: number;
  prefillTps: number;
  /** From generate() being called (after queueing) to the first generated token. */
  ttftMs: number;
  nGen: number;
  decodeMs: number;
  decodeTps: number;
  peakRssBytes: number;
  threads: number;
  ctx: number;
  /** jsonSchema/grammar: ms to compile the grammar, and tokens whose first draw it rejected. */
  grammarMs: number;
  grammarResamples: number;
  /** Batches delivered to JS and their worker-to-JS latency. */
  batches: number;
  deliveryP50Us: number;
  deliveryP99Us: number;
  /** Milliseconds this request waited behind earlier ones on the same model. */
  queuedMs: number;
  /** Thread-count changes during this generation (thermal level or sysfs), and the fewest
   * threads it ran on. */
  threadChanges: number;
  minThreads: number;
  /** Milliseconds parked by pause() or thermal level 6 (EMERGENCY). */
  pausedMs: number;
  /** Media: items, the context positions they took (part of nPrompt/nCached), ms to read and
   * decode them, ms the projector encoded, and chunks taken from the encoded-media cache. */
  nMedia: number;
  nMediaTokens: number;
  mediaDecodeMs: number;
  mediaEncodeMs: number;
  mediaChunksCached: number;
  /** Speculative decoding: tokens guessed and checked, those kept, how many of those the
   * grammar forced, and the decode calls of the generation (nGen / decodeCalls: tokens per
   * decode). */
  specDrafted: number;
  specAccepted: number;
  specForced: number;
  decodeCalls: number;
  /** With a draft model (LoadOptions.draftPath): tokens it guessed (part of specDrafted),
   * those kept (part of specAccepted), and the ms its decodes took. */
  specDraftDrafted: number;
  specDraftAccepted: number;
  specDraftMs: number;
  /** The model was unloaded by setMemoryLevel(2) and loaded again for this request. */
  reloaded: boolean;
}

/** How speculative decoding guesses (GenerateOptions.speculative). */
export interface SpeculativeOptions {
  /** Guess the tokens that followed the last few tokens where they appeared before (prompt
   * lookup): pays where the answer copies its input. Default true. */
  ngram?: boolean;
  /** With a grammar or JSON schema, guess the text it forces next (keys, quotes, colons).
   * Default true. */
  jump?: boolean;
  /** With jump: take the forced text unchecked, in the tokenizer's own split, decoded with the
   * next step's batch (SGLang's jump-forward). Pays even where a check batch is expensive, but
   * the model might have spelled that text with other tokens, so what follows may differ from a
   * decode without it. Default false (forced text is checked: output exactly the model's). */
  jumpCommit?: boolean;
  /** Guesses from the draft model (LoadOptions.draftPath), where the n-gram lookup has none;
   * not for prompts with media. Default true. */
  draft?: boolean;
  /** The draft model stops guessing at a token it gives less than this probability.
   * Default 0.6, 0 .. 1. */
  draftPMin?: number;
  /** Tokens guessed per decode at most: 0 turns speculation off. Default 8, at most 16. */
  maxDraft?: number;
  /** Guess fewer (or none) when the measured acceptance and decode cost say guessing loses.
   * Default true; false always guesses maxDraft when a source has a guess (benchmarks), which
   * also makes the batch shapes, and so a greedy reply, the same run after run: the adaptive
   * choice follows measured time, and where batched and one-token logits differ in their last
   * bits (random-weight models) the text can change with it (docs/speculative.md). */
  adaptive?: boolean;
}

/** A JSON Schema (draft 2020-12 subset that llama.cpp's converter handles: type, properties,
 * required, additionalProperties, items, prefixItems, minItems/maxItems, enum, const, anyOf,
 * oneOf, allOf, $ref/$defs, minimum/maximum, minLength/maxLength, pattern, format...). */
export interface JsonSchema {
  [keyword: string]: unknown;
}

/** With jsonSchema: "complete" (the model ended the output where the schema ends: `json` holds
 * it), "incomplete" (max tokens, a full context or a cancel came first: no `json`), "invalid"
 * (a stop string ended it first). */
export type JsonState = "complete" | "incomplete" | "invalid";

/** T: the type the app expects the schema's JSON to have (generate<Intent>(...)). */
export interface GenerateResult<T = unknown> {
  text: string;
  finishReason: FinishReason;
  stats: GenerationStats;
  /** Only with jsonSchema. */
  jsonState?: JsonState;
  /** The parsed JSON, only when jsonState is "complete". */
  json?: T;
  /** A reasoning model's thinking, apart from `text` (reasoning "separate"). */
  reasoning?: string;
  /** With tools: the calls the model made (finishReason "tool_calls"). */
  toolCalls?: ToolCall[];
  /** With an index: the chunks the prompt carried, [1] first (empty: none matched, the
   * question went alone). */
  sources?: SearchHit[];
}

/** A text stream: iterate it for batches; `result` settles with the whole generation. */
export interface TextStream extends AsyncIterable<string> {
  readonly result: Promise<GenerateResult>;
}

export class Model {
  /** Loads a GGUF and creates its session on a new worker thread. */
  static load(path: string, options?: LoadOptions): Promise<Model>;
  readonly info: ModelInfo;
  /** True while a generation runs or waits. */
  readonly busy: boolean;
  readonly disposed: boolean;
  /** Generations on one model run one at a time, in call order: a call on a busy model is
   * queued, not rejected. */
  generate<T = unknown>(prompt: string, options?: GenerateOptions): Promise<GenerateResult<T>>;
  stream(prompt: string, options?: Omit<GenerateOptions, "onToken">): TextStream;
  /** Frees the KV cache now (rebuilt on the next generate) to give memory back. */
  releaseKv(): Promise<void>;
  /** Loads a LoRA adapter (GGUF, llama.cpp's convert_lora_to_gguf.py format) against this
   * model; it is not applied until setLora(). ERR_NOT_FOUND / ERR_CORRUPT_DATA /
   * ERR_INVALID_ARGUMENT (another architecture or shape). */
  loadLora(path: string): Promise<LoraAdapter>;
  /** Applies `adapter` at `scale` (default 1; 0 removes it), between generations in call
   * order. Several adapters may be applied at once. */
  setLora(adapter: LoraAdapter, scale?: number): Promise<void>;
  /** Un-applies `adapter` and frees it. */
  removeLora(adapter: LoraAdapter): Promise<void>;
  /** Un-applies every adapter: the next generation is the base model's exactly. */
  clearLora(): Promise<void>;
  /** Cancels the running generation and the queued ones (they resolve "cancelled" with the
   * text so far); queued jobs such as conversation saves still run. Resolves once the running
   * request has settled. */
  cancelAll(): Promise<void>;
  /** A conversation that keeps its KV cache between turns. Rejects with ERR_INVALID_ARGUMENT
   * when the model has no chat template (unless chatmlFallback) or an option is bad. */
  conversation(options?: ConversationOptions): Promise<Conversation>;
  /** A conversation saved with conversation.save(): history always, the KV cache when the file
   * was made with this model, context size, adapters and llama.cpp build and is intact
   * (conversation.restoreInfo says which). ERR_NOT_FOUND / ERR_CORRUPT_DATA otherwise. */
  restoreConversation(path: string, options?: ConversationOptions): Promise<Conversation>;
  /** Cancels the running and queued generations (they resolve "cancelled"), waits for the
   * worker, then frees the model. Idempotent; later generate() calls reject (ERR_DISPOSED). */
  dispose(): Promise<void>;
}

export interface LoraInfo {
  arch: string;
  rank: number;
  alpha: number;
  /** Adapted weight matrices. */
  nPairs: number;
  fileBytes: number;
  loadMs: number;
}

export class LoraAdapter {
  private constructor();
  readonly model: Model;
  readonly id: number;
  readonly path: string;
  readonly info: LoraInfo;
}

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool" | string;
  /** null for an assistant turn that only called tools. */
  content: string | null;
  /** assistant: its reasoning (a reasoning model's; the template decides whether it is shown
   * again). */
  reasoning?: string;
  /** assistant: the tools it called (arguments as JSON text or an object). */
  toolCalls?: Array<{ id?: string; name: string; arguments: string | object }>;
  /** tool: the id of the call this result answers, and the tool's name. */
  toolCallId?: string;
  name?: string;
  /** user: the turn's images and audio clips (placed at its `<__media__>` markers, else
   * before its text); the model must be loaded with its projector (mmprojPath). */
  images?: MediaInput[];
  audio?: MediaInput[];
  /** In a conversation's history: how many images and audio clips the turn carries (their
   * bytes stay native). */
  readonly mediaCount?: number;
}

/** A tool the model may call: a name, what it does, and a JSON Schema of its arguments. */
export interface ToolDefinition {
  name: string;
  description?: string;
  parameters?: JsonSchema;
}
/** OpenAI's shape of a tool is accepted too. */
export interface OpenAITool {
  type: "function";
  function: ToolDefinition;
}
/** A call the model made: `arguments` as it wrote them (JSON text), `args` parsed. */
export interface ToolCall<A = Record<string, unknown>> {
  id: string;
  name: string;
  arguments: string;
  args: A;
}

export type OverflowPolicy = "drop_oldest" | "fail";

export interface ConversationOptions {
  systemPrompt?: string;
  /** When a turn or its reply does not fit the context: drop the oldest whole turns and keep
   * the system prompt ("drop_oldest", default), or reject with ERR_RESOURCE_EXHAUSTED. */
  overflow?: OverflowPolicy;
  /** A folder where prepare() keeps the system prompt's KV cells between app starts. */
  promptCache?: string;
  /** Budget of that folder; least recently used files go beyond it. Default 256 MiB. */
  promptCacheBytes?: number;
  /** Use ChatML for a model without a chat template of its own. Default false. */
  chatmlFallback?: boolean;
  /** The next turn's prompt keeps the tokens each reply was sampled as, where they spell the
   * rendered history, instead of tokenizing the history again (which can split a reply
   * differently and prefill everything after the difference again). Default true; false
   * tokenizes the rendered history every turn, as a fresh session would. */
  keepSampledTokens?: boolean;
  /** Where enterBackground() saves this conversation (a file under the app's filesDir, never
   * its cacheDir). Default: not saved. */
  savePath?: string;
  /** Ground every user turn in this index: its best chunks go into the turn (and stay in the
   * history with it, so later turns reuse their KV cache and an overflow drops them with the
   * turn); each result lists them in `sources`. send(text, {index: null}) skips one turn. */
  index?: DocumentIndex;
  /** How those chunks are found (default: hybrid, top 3, at most 1024 tokens). */
  retrieval?: GroundOptions;
}

export interface PrepareStats {
  nTokens: number;
  /** From the prompt cache rather than prefilled. */
  restored: boolean;
  ms: number;
  stateBytes: number;
  whyNotRestored: string;
}

export interface RestoreInfo {
  kvRestored: boolean;
  nTokens: number;
  whyNot: string;
}

/** A chat on a Model that keeps its KV cache: each reply prefills only the new turn. Calls are
 * queued on the model with its generate() calls (one request at a time). */
export class Conversation {
  /** Oldest first, system prompt not included (a copy). */
  readonly history: ChatMessage[];
  readonly systemPrompt: string;
  readonly overflow: OverflowPolicy;
  readonly disposed: boolean;
  /** Set by model.restoreConversation(). */
  readonly restoreInfo?: RestoreInfo;
  /** The index every user turn is grounded in (conversation({index})), or null. */
  readonly index: DocumentIndex | null;
  /** Adds a user turn and generates the reply (added to the history, also when cancelled
   * with text). chat, systemPrompt, history and reusePrefix are the conversation's. */
  send<T = unknown>(text: string, options?: GenerateOptions): Promise<GenerateResult<T>>;
  stream(text: string, options?: Omit<GenerateOptions, "onToken">): TextStream;
  /** Drops the last reply (if any) and answers the last user turn again. */
  regenerate(options?: GenerateOptions): Promise<GenerateResult>;
  truncate(nMessages: number): Promise<void>;
  /** Replaces message `index` and drops those after it; regenerate() answers it. */
  edit(index: number, text: string): Promise<void>;
  reset(): Promise<void>;
  setHistory(messages: ChatMessage[]): Promise<void>;
  /** Prefills the system prompt now (from the prompt cache when it holds it). */
  prepare(): Promise<PrepareStats>;
  /** History and, when they are this conversation's, the KV cells, written atomically. */
  save(path: string): Promise<void>;
  /** Frees the native conversation; idempotent. Later calls reject with ERR_DISPOSED. */
  dispose(): Promise<void>;
}

/** The seed's contract (first field report, §3.2): a handle and a promise of the full text. */
export function InitModel(path: string, threads?: number, ctx?: number): Promise<Model>;
export function Generate(handle: Model, prompt: string, maxTokens?: number,
                         temperature?: number): Promise<string>;

/** maxFreqKhz is 0 where cpufreq is absent (most VMs). */
export interface CpuCluster { maxFreqKhz: number; cpus: number[]; }
export interface ThermalZone { zone: string; type: string; tempC: number; valid: boolean; }
export interface DeviceProfile {
  totalRamBytes: number;
  availableRamBytes: number;
  nCpus: number;
  bigCores: number;
  clusters: CpuCluster[];
  thermal: ThermalZone[];
  /** Hottest valid zone; -273.15 when there is none. */
  maxTempC: number;
  platform: string;
  socModel: string;
  diskFreeBytes: number;
  diskPath: string;
}
/** Reads RAM, CPU clusters, thermal zones and free disk (root: a fixture tree, for tests). */
export function deviceProfile(options?: { root?: string; diskPath?: string }): DeviceProfile;

export interface MemoryPlan {
  ctx: number;
  batch: number;
  quant: string;
  ramBytes: number;
  budgetBytes: number;
  formulaBytes: number;
  weightsBytes: number;
  kvBytes: number;
  computeBytes: number;
  overheadBytes: number;
  /** The projector's weights and encoder (mmprojPath), 0 without one. */
  projectorBytes: number;
  /** The draft model's weights, KV cache and compute (draftPath), 0 without one. */
  draftBytes: number;
  totalBytes: number;
  fits: boolean;
  maxCtxThatFits: number;
  advice: string;
}
/** Plans peak memory from the GGUF header without reading weights (docs/device-and-planner.md). */
export function planMemory(path: string,
                           options?: { ctx?: number; batch?: number; ramBytes?: number;
                                       budgetFraction?: number;
                                       /** The model's projector: planned too. */
                                       mmprojPath?: string; imageMaxTokens?: number;
                                       /** A draft model (LoadOptions.draftPath): planned too. */
                                       draftPath?: string }): Promise<MemoryPlan>;

export interface PullProgress {
  stage: "manifest" | "download" | "verify" | "commit" | "activate" | "gc" | "done";
  bytesDone: number;
  bytesTotal: number;
  percent: number;
  bytesPerSecond: number;
  /** Seconds left, -1 when unknown. */
  etaSeconds: number;
}
export interface InstalledModel {
  id: string;
  version: number;
  active: boolean;
  path: string;
  quant: string;
  sizeBytes: number;
}
/** Pulls a packed model (manifest URL) into a model store: verified, resumable, atomic. */
export function pull(manifestUrl: string,
                     options: { store: string; onProgress?: (p: PullProgress) => void;
                                signal?: AbortSignal }): Promise<InstalledModel>;
/** Installed models of a store. */
export function listModels(store: string): Promise<InstalledModel[]>;
export interface EnsureResult {
  /** Some version of the model is active. */
  installed: boolean;
  activeVersion: number;
  /** The active version is older than the one required (or none is installed): pull it, and
   * keep serving `path` meanwhile. */
  upgradeNeeded: boolean;
  /** The active model file ("" when none). */
  path: string;
}
/** Whether `id` is installed at `version` or later, and what to serve meanwhile. */
export function ensureModel(store: string, id: string, version: number): Promise<EnsureResult>;
/** Re-hashes a version (default: the active one) against its manifest: every chunk and the
 * whole file. Rejects with ERR_CORRUPT_DATA naming what differs, ERR_NOT_FOUND. */
export function verifyModel(store: string, id: string, version?: number): Promise<void>;
/** Removes one version (not the active one unless it is the only one), or the whole model. */
export function removeModel(store: string, id: string, version?: number): Promise<void>;

/** Resident and peak resident memory of this process, in bytes. */
export function memoryUsage(): { rssBytes: number; peakRssBytes: number };
/** Versions: the addon, libllama's pinned build. */
// ---- Routing and cloud fallback (docs/node.md "Runtime") ----

export type Route = "on-device" | "cloud" | "refuse";

export interface CloudOptions {
  /** An OpenAI-compatible server: "http://127.0.0.1:8080", "https://host/v1" or the full
   * ".../chat/completions" URL. */
  baseUrl: string;
  /** The request's "model" field. Default "default". */
  model?: string;
  /** Bearer token (never logged). Default: the EDGELLM_CLOUD_API_KEY environment variable. */
  apiKey?: string;
  connectTimeoutS?: number;
  idleTimeoutS?: number;
  /** Retries on 429, 5xx and connection failures while no text has streamed. Default 3. */
  maxRetries?: number;
}

export interface RouteEvent {
  route: Route;
  /** Why, in one sentence. */
  reason: string;
  /** The planned path failed before any text and this is the other one. */
  fallback: boolean;
}

export interface RuntimeOptions {
  /** The on-device model (may be missing: then the cloud serves, or the request is refused). */
  modelPath?: string;
  threads?: number;
  ctx?: number;
  /** The data may not leave the device: never the cloud. */
  privacy?: boolean;
  /** No network: never the cloud. */
  offline?: boolean;
  /** Wanted time to first token (0 = none), and the cloud's best. */
  latencyTargetMs?: number;
  cloudTtftMs?: number;
  /** Use the device whenever it can (default: only when privacy, offline or latency need it,
   * the first field report's Decision 1). */
  preferOnDevice?: boolean;
  /** Plan against this much RAM (default: this device's). */
  ramBytes?: number;
  /** Read the device profile under this root (tests: a fake sysfs tree). */
  deviceRoot?: string;
  cloud?: CloudOptions;
  /** Called when a path starts serving, before its first text (again on a fallback). */
  onRoute?: (event: RouteEvent) => void;
}

export interface RuntimeDecision {
  route: Route;
  reason: string;
  /** Whether this device could run the model, and why not. */
  localPossible: boolean;
  localWhy: string;
}

export interface RoutedResult extends GenerateResult {
  /** The path that served, and why. */
  route: Route;
  reason: string;
  /** The planned path failed before any text; `failure` says how. */
  fellBack: boolean;
  failure: string;
}

export interface RuntimeGenerateOptions extends GenerateOptions {
  /** Overrides the runtime's onRoute for this request. */
  onRoute?: (event: RouteEvent) => void;
}

export class Runtime {
  /** Reads the device and the model's memory plan (no weights are read) and decides. Rejects
   * only on unusable options (ERR_INVALID_ARGUMENT: a bad cloud URL, ...). */
  static create(options?: RuntimeOptions): Promise<Runtime>;
  readonly decision: RuntimeDecision;
  readonly disposed: boolean;
  /** Loads the on-device model now when the route is on-device (a no-op otherwise). */
  prepare(): Promise<void>;
  /** One request at a time, in call order. A refusal rejects with ERR_FAILED_PRECONDITION and
   * the policy's reason; whichever path serves, text arrives through onToken. */
  generate(prompt: string, options?: RuntimeGenerateOptions): Promise<RoutedResult>;
  stream(prompt: string, options?: Omit<RuntimeGenerateOptions, "onToken">): TextStream;
  /** Stops the request in flight (it resolves "cancelled"). */
  cancel(): void;
  dispose(): Promise<void>;
}

// ---- The app's platform signals (docs/node.md "Platform signals") ----

/** HarmonyOS `@ohos.thermal` ThermalLevel (Android's thermal status maps the same way). */
export type ThermalLevel = 0 | 1 | 2 | 3 | 4 | 5 | 6;
/** The platform's thermal level, which then replaces the sysfs reader (-1 goes back to it):
 * 0 COOL, 1 NORMAL: all threads; 2 WARM: all threads, 5 ms yield per batch; 3 HOT: half the
 * threads, 10 ms; 4 OVERHEATED: 1 thread, 20 ms; 5 WARNING: 1 thread, 50 ms; 6 EMERGENCY:
 * generations park between tokens until the level drops. Applies at the next token of every
 * model. A RangeError-like ERR_INVALID_ARGUMENT outside -1..6. */
export function setThermalLevel(level: ThermalLevel | -1): void;

/** HarmonyOS onMemoryLevel: 0 MODERATE, 1 LOW, 2 CRITICAL. */
export type MemoryLevel = 0 | 1 | 2;
export interface MemoryLevelResult {
  level: MemoryLevel;
  /** Live models, and how many freed their KV cache or their weights. */
  models: number;
  kvReleased: number;
  unloaded: number;
}
/** MODERATE frees nothing; LOW frees every model's KV cache; CRITICAL also frees every model's
 * weights, parking its conversations: the next request loads the same file again
 * (stats.reloaded) and nothing the app holds becomes invalid. Each model acts once its queued
 * work is done; the promise settles when all have. */
export function setMemoryLevel(level: MemoryLevel): Promise<MemoryLevelResult>;

/** Screen off / window hidden: every generation parks between tokens, state kept, until
 * resume(). Models loaded while paused start paused. */
export function pause(): void;
export function resume(): void;

export interface Signals {
  /** What the app last said; -1: never. */
  thermalLevel: number;
  memoryLevel: number;
  paused: boolean;
}
export function signals(): Signals;

export interface BackgroundResult {
  models: number;
  /** Models that had a generation running or queued. */
  cancelled: number;
  /** The savePath of every conversation saved. */
  saved: string[];
  failed: { path: string; code: string; message: string }[];
}
/** The app went to the background (onBackground): cancels every generation, saves each
 * conversation that has a savePath, then frees the KV caches (releaseKv: false keeps them). */
export function enterBackground(options?: { releaseKv?: boolean }): Promise<BackgroundResult>;

export type LogLevel = "debug" | "info" | "warn" | "error";
export interface LogLine {
  level: LogLevel;
  source: "edgellm" | "llama.cpp";
  /** One whole line, without its newline. */
  text: string;
  /** When it was logged (ms since the epoch). */
  timeMs: number;
}
export interface LogSubscription {
  readonly active: boolean;
  /** Stops delivery: the callback is never called afterwards. Idempotent. */
  dispose(): void;
}
/** Library and llama.cpp log lines at `level` and above (default "info"), delivered in batches
 * on the JS thread (never from a worker), e.g. to hilog. One sink at a time: a new onLog()
 * replaces the previous one. */
export function onLog(callback: (lines: LogLine[]) => void,
                      options?: { level?: LogLevel }): LogSubscription;

// ---- documents: embeddings, rerank and a local index (docs/node.md "Documents") ----

export type Pooling = "model" | "mean" | "cls" | "last" | "rank";

export interface EmbedderOptions {
  /** Decode threads. Default: physical cores. */
  threads?: number;
  /** Default "model": what the GGUF says (a file without one is refused). */
  pooling?: Pooling;
  /** Tokens one text may have, special tokens included. Default: the model's training context,
   * at most 512 (each token of a decode costs an output row of n_vocab floats on a decoder
   * embedder). */
  maxTokens?: number;
  /** Tokens decoded together (texts share a decode). Default max(512, maxTokens). */
  batchTokens?: number;
  /** Texts decoded together, at most. Default 64. */
  batchTexts?: number;
  /** Put before kind "query" / "document" texts. Default: the model's own, else none. */
  queryPrefix?: string;
  documentPrefix?: string;
  loadMode?: LoadMode;
  /** Cancels the load (rejects with an AbortError). */
  signal?: AbortSignal;
  onProgress?: (p: LoadProgress) => void;
}

export interface EmbedderInfo {
  path: string;
  name: string;
  arch: string;
  /** sha256 of the GGUF's header and tensor table: an index records it. */
  identity: string;
  /** The pooling in use (never "model"). */
  pooling: Exclude<Pooling, "model">;
  /** Length of each vector (0 for a reranker). */
  dims: number;
  maxTokens: number;
  batchTokens: number;
  batchTexts: number;
  canEmbed: boolean;
  canRerank: boolean;
  hasRerankTemplate: boolean;
  queryPrefix: string;
  documentPrefix: string;
}

/** done/total: texts (embed, rerank) or chunks (index adds) finished so far. */
export interface WorkProgress {
  done: number;
  total: number;
}

export interface EmbedOptions {
  /** "query" / "document" add the model's (or the options') prefix. Default "plain". */
  kind?: "plain" | "query" | "document";
  /** Scale each vector to length 1. Default true. */
  normalize?: boolean;
  /** A text over maxTokens: false (default) rejects the call with ERR_INVALID_ARGUMENT naming
   * it; true keeps its first maxTokens tokens (`truncated` says which). */
  truncate?: boolean;
  /** Rejects with an AbortError; the call stops after its current decode. */
  signal?: AbortSignal;
  onProgress?: (p: WorkProgress) => void;
}

export interface EmbedStats {
  texts: number;
  tokens: number;
  truncated: number;
  decodes: number;
  tokenizeMs: number;
  decodeMs: number;
  totalMs: number;
}

export interface EmbedResult {
  /** One per text, in input order, each over its own ArrayBuffer. */
  vectors: Float32Array[];
  dims: number;
  nTokens: number[];
  truncated: boolean[];
  stats: EmbedStats;
}

export interface RerankOptions {
  truncate?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: WorkProgress) => void;
}

export interface RerankResult {
  /** Per document, in input order: the model's raw score and its sigmoid in (0, 1). */
  scores: number[];
  probabilities: number[];
  /** Document indices, most relevant first. */
  order: number[];
  nTokens: number[];
  stats: EmbedStats;
}

/** An embedding model (vectors) or a reranker (query/document scores), on its own worker
 * thread; many texts share each decode. */
export class Embedder {
  static load(path: string, options?: EmbedderOptions): Promise<Embedder>;
  readonly info: EmbedderInfo;
  readonly disposed: boolean;
  /** One Float32Array per text, in input order (a string: one vector). Rejects with
   * ERR_INVALID_ARGUMENT for an empty text, invalid UTF-8, a NUL or a text over maxTokens
   * (without truncate), and on a reranker. */
  embed(texts: string | string[], options?: EmbedOptions): Promise<Float32Array[]>;
  /** As embed(), with token counts and timings. */
  embedDetailed(texts: string | string[], options?: EmbedOptions): Promise<EmbedResult>;
  /** Relevance of each document to `query` (a rank-pooling model). */
  rerank(query: string, documents: string[], options?: RerankOptions): Promise<RerankResult>;
  /** Cancels running and queued calls (they reject with ERR_CANCELLED) and frees the model;
   * an index opened with it keeps it until the index closes. Idempotent. */
  dispose(): Promise<void>;
}

/** Loads an embedding model or a reranker (Embedder.load). */
export function loadEmbedder(path: string, options?: EmbedderOptions): Promise<Embedder>;
/** Cosine similarity of two vectors of equal length. */
export function cosineSimilarity(a: ArrayLike<number>, b: ArrayLike<number>): number;

export type VectorType = "f32" | "int8";
export type SearchMode = "vector" | "lexical" | "hybrid";

export interface IndexOptions {
  /** A new index only: "f32" (default) or "int8" (a quarter of the size; recall@10 measured
   * in docs/retrieval.md). */
  vectorType?: VectorType;
  /** Tokens per chunk, at most. Default 200. */
  chunkTokens?: number;
  /** Tokens a chunk repeats from the one before (whole sentences). Default 40. */
  chunkOverlap?: number;
  /** Search and stats only; the folder must hold an index. Default false. */
  readOnly?: boolean;
}

export interface AddOptions {
  /** Rejects with an AbortError and leaves the index as it was. */
  signal?: AbortSignal;
  onProgress?: (p: WorkProgress) => void;
}

export interface AddResult {
  source: string;
  chunks: number;
  tokens: number;
  /** Chunks cut to fit the embedder. */
  truncated: number;
  /** The source was there before (its old chunks are gone). */
  replaced: boolean;
  embedMs: number;
  totalMs: number;
}

export interface SearchOptions {
  /** Default 5 (1..1000). */
  topK?: number;
  /** Default "hybrid" (both rankings fused by reciprocal rank). "vector" and "hybrid" need the
   * index's embedder. */
  mode?: SearchMode;
  /** A reranker: the fused top rerankTopN are scored with the query and reordered. */
  reranker?: Embedder;
  /** Default 20. */
  rerankTopN?: number;
}

export interface SearchHit {
  chunkId: number;
  source: string;
  /** Bytes of the source's UTF-8 text. */
  start: number;
  end: number;
  text: string;
  /** What the hits are ordered by: fused, rerank, or one ranking's score. */
  score: number;
  /** Which ranking found it. With random-weights fixtures only "lexical" means anything. */
  foundBy: "vector" | "lexical" | "both";
  /** 1-based ranks in each ranking (0: not in it) and their scores. */
  vectorRank: number;
  lexicalRank: number;
  /** Cosine similarity. */
  vectorScore: number;
  /** BM25 (higher is better). */
  lexicalScore: number;
  /** Raw reranker score, when reranked. */
  rerankScore?: number;
}

export interface SearchResult {
  hits: SearchHit[];
  ms: number;
  chunksSearched: number;
}

export interface GroundOptions extends SearchOptions {
  /** Chunks of at most this many tokens in all (whole chunks, best first). Default 1024. */
  maxContextTokens?: number;
  /** The line before the chunks. Default: answer from the notes and cite them like [1]. */
  instruction?: string;
}

export interface Grounded {
  /** The instruction, "[1] (source) text", ..., then the question. */
  prompt: string;
  cited: SearchHit[];
  searchMs: number;
}

export interface IndexStats {
  /** The SQLite file. */
  path: string;
  sources: number;
  chunks: number;
  tokens: number;
  /** The database and its WAL. */
  bytesOnDisk: number;
  dims: number;
  vectorType: VectorType;
  modelName: string;
  modelIdentity: string;
  chunkTokens: number;
  chunkOverlap: number;
  sourceNames: string[];
}

/** The user's texts, chunked, embedded and stored in one SQLite file (dir/index.sqlite), on its
 * own worker thread. Every add or remove is one transaction: a process killed mid-add leaves
 * the index as it was or with the whole add. */
export class DocumentIndex {
  /** Opens (or creates) the index in `dir`. `embedder` null: lexical search, stats and remove
   * only. An index made with another model rejects with ERR_FAILED_PRECONDITION naming both;
   * a damaged file with ERR_CORRUPT_DATA. */
  static open(dir: string, embedder: Embedder | null, options?: IndexOptions): Promise<DocumentIndex>;
  readonly embedder: Embedder | null;
  readonly closed: boolean;
  /** Adds `text` as `source` (a name: a path, a note's id), replacing what it had. */
  addText(source: string, text: string, options?: AddOptions): Promise<AddResult>;
  /** Reads a UTF-8 text file and adds it with its path as the source. */
  addFile(path: string, options?: AddOptions): Promise<AddResult>;
  /** The number of chunks removed (0: the source was not there). */
  remove(source: string): Promise<number>;
  search(query: string, options?: SearchOptions): Promise<SearchResult>;
  /** The question with the best chunks before it, for a chat turn (what conversation({index})
   * does each turn). */
  ground(question: string, options?: GroundOptions): Promise<Grounded>;
  stats(): Promise<IndexStats>;
  /** Cancels a running add (the index keeps what it had) and closes. Idempotent. */
  close(): Promise<void>;
}

/** Opens (or creates) a document index (DocumentIndex.open). */
export function openIndex(dir: string, embedder: Embedder | null,
                          options?: IndexOptions): Promise<DocumentIndex>;

/** The addon's versions: edgellm's (the package's version), the git commit it was built from,
 * the llama.cpp release inside it, and the Node-API version it targets. */
export const version: { edgellm: string; commit: string; llama: string; napi: number };
