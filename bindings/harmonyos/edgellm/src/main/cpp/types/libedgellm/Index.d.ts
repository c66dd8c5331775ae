// GENERATED FILE - do not edit. Regenerate: node bindings/harmonyos/gen.mjs
// libedgellm.so, the raw NAPI module built from bindings/node/src (edgellm 0.1.0). An app
// never imports it: the HAR's Index.js does (`import native from 'libedgellm.so'`) and wraps it
// in the API that Index.d.ts declares. Its members are the addon's own (NativeModel, pull, ...),
// an internal interface, so they are not declared here.
declare const native: object;
export default native;
