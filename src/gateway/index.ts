/**
 * The any-language edge (DESIGN.md "Any-language edge"): `startGateway` serves the harness'
 * `POST /dispatch` wire and a runs API over the producer. A top layer like `cli`: it imports
 * the producer, never the consumer.
 */
export { startGateway, type Gateway } from './gateway-server.js';
export { GatewayOptionsSchema, compileGatewayOptions, isLoopbackHost, DEFAULT_MAX_BODY_BYTES, DEFAULT_GRACE_MS, type GatewayOptions, type CompiledGatewayOptions } from './gateway-options.js';
export { DISPATCH_STATUS } from '../harness/http/dispatch-route.js';
